// Command echoserver answers every HTTP request on :8080 with its hostname (the pod's name), for
// the integration test's LoadBalancer Service.
package main

import (
	"fmt"
	"log"
	"net/http"
	"os"
)

func main() {
	host, _ := os.Hostname()
	log.Fatal(http.ListenAndServe(":8080", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "hello from %s\n", host)
	})))
}
