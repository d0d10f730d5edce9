// Calls a webhook as kube-apiserver's webhook client does: Go's net/http over
// HTTP/1.1, with no TLS session cache (so no session is resumed), a review
// posted N times. "new": each review on a connection of its own, closed by the
// client afterwards (kube-apiserver closes what it does not keep idle);
// "kept": every review on one kept-alive connection.
//
// Usage: webhook_caller CA_FILE URL BODY_FILE N new|kept
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
)

func main() {
	if len(os.Args) != 6 {
		fmt.Fprintln(os.Stderr, "usage: webhook_caller CA_FILE URL BODY_FILE N new|kept")
		os.Exit(2)
	}
	ca, err := os.ReadFile(os.Args[1])
	check(err)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		check(fmt.Errorf("%s holds no PEM certificate", os.Args[1]))
	}
	body, err := os.ReadFile(os.Args[3])
	check(err)
	n, err := strconv.Atoi(os.Args[4])
	check(err)
	transport := func() *http.Transport {
		return &http.Transport{MaxIdleConnsPerHost: 25, TLSClientConfig: &tls.Config{
			RootCAs: pool, NextProtos: []string{"http/1.1"}}}
	}
	kept := transport()
	for i := 0; i < n; i++ {
		t := kept
		if os.Args[5] == "new" {
			t = transport()
		}
		resp, err := (&http.Client{Transport: t}).Post(os.Args[2], "application/json",
			bytes.NewReader(body))
		check(err)
		_, err = io.ReadAll(resp.Body)
		check(err)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			check(fmt.Errorf("the webhook answered %s", resp.Status))
		}
		if t != kept {
			t.CloseIdleConnections()
		}
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
