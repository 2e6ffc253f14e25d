package oidclogin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"

	"github.com/skip2/go-qrcode"
	"golang.org/x/oauth2"
	"golang.org/x/term"
)

// deviceLogin runs the device authorization grant (RFC 8628): it asks the issuer for a user
// code, shows it with the verification URI (and a QR code of the URI that fills the code in,
// when the messages go to a terminal), and polls at the issuer's interval, slower after each
// slow_down, until the user has approved the login in a browser on any device. idpParams name
// the upstream identity provider, as on an authorization request.
func (l *login) deviceLogin(ctx context.Context, idpParams []oauth2.AuthCodeOption) (*Token, error) {
	cfg := l.oauth2Config("")
	cfg.Endpoint.DeviceAuthURL = l.disc.DeviceAuthorizationEndpoint
	da, err := cfg.DeviceAuth(ctx, idpParams...)
	if err != nil {
		return nil, describeTokenError("starting the device login", err)
	}
	fmt.Fprintf(l.out, "To log in, open this page in a browser on any device:\n\n    %s\n\nand enter the code %s\n", da.VerificationURI, da.UserCode)
	if da.VerificationURIComplete != "" {
		fmt.Fprintf(l.out, "\nor open this link, which fills the code in:\n\n    %s\n", da.VerificationURIComplete)
		if isTerminal(l.out) {
			if qr, err := qrcode.New(da.VerificationURIComplete, qrcode.Low); err == nil {
				fmt.Fprintf(l.out, "\n%s", qr.ToSmallString(false))
			}
		}
	}
	fmt.Fprintln(l.out, "\nWaiting for the login to be approved...")
	raw, err := cfg.DeviceAccessToken(ctx, da)
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		switch re.ErrorCode {
		case "access_denied":
			return nil, errors.New("the device login was denied on the verification page")
		case "expired_token":
			return nil, errors.New("the code expired before the login was approved: run the command again")
		}
	}
	if err != nil {
		return nil, describeTokenError("the device login", err)
	}
	return l.tokenFrom(ctx, raw, "", true)
}

// isTerminal reports whether w is a terminal, where a QR code can be drawn.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// browserAvailable reports whether this machine can likely open a browser: $BROWSER names one,
// the system has an opener of its own (macOS, Windows), or a graphical session is running.
// Without one, and without a terminal to paste a code on, a login uses the device flow.
func browserAvailable(getenv func(string) string) bool {
	switch {
	case getenv("BROWSER") != "":
		return true
	case runtime.GOOS == "darwin" || runtime.GOOS == "windows":
		return true
	}
	return getenv("DISPLAY") != "" || getenv("WAYLAND_DISPLAY") != ""
}
