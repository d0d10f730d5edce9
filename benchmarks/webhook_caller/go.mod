module webhookcaller

go 1.20
