// Package core holds what the servers, the CLI and the test harness share: API types, generated
// clients, authenticators, certificate authorities and controllers.
package core
