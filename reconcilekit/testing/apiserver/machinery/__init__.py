"""What every part of the server shares, as k8s.io/apimachinery is to kube-apiserver."""
