// Package clilogin runs the built pinniped CLI's "login oidc" against the Dex fixture, with a real
// headless Chromium as the user's browser, and no cluster: the browser login, the session cache
// and the refresh of an expired ID token, as kubectl would run the plugin.
package clilogin
