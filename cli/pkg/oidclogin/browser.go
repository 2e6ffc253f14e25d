package oidclogin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

const pastePrompt = "    Optionally, paste your authorization code: "

// authResponse is an authorization response: from the listener, which waits on result to tell
// the browser how the login ended, or pasted by the user.
type authResponse struct {
	params     url.Values
	checkState bool
	result     chan<- error
}

// browserLogin runs the authorization code flow through the user's browser.
func (l *login) browserLogin(ctx context.Context, a authRequest) (*Token, error) {
	port := strconv.Itoa(int(l.cfg.ListenPort))
	var ln net.Listener
	if !l.cfg.SkipListen {
		var err error
		if ln, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", port)); err != nil {
			if l.cfg.Prompter == nil {
				return nil, fmt.Errorf("could not listen for the browser's redirect on 127.0.0.1:%s: %w", port, err)
			}
			fmt.Fprintf(l.out, "Could not listen for the browser's redirect (%v): paste the code instead.\n", err)
		}
	}
	if ln == nil && l.cfg.Prompter == nil {
		return nil, errors.New("no way to receive the authorization code: the localhost listener is disabled and there is no terminal to paste the code on")
	}
	redirectHost := net.JoinHostPort("127.0.0.1", port)
	if ln != nil {
		redirectHost = ln.Addr().String()
	}
	redirectURI := (&url.URL{Scheme: "http", Host: redirectHost, Path: callbackPath}).String()
	params := a.params
	formPost := l.disc.SupportsFormPost()
	if formPost {
		params = append(slices.Clone(params), oauth2.SetAuthURLParam("response_mode", "form_post"))
	}
	authURL := l.oauth2Config(redirectURI).AuthCodeURL(a.state, params...)

	responses := make(chan authResponse)
	done := make(chan struct{})
	if ln != nil {
		srv := &http.Server{Handler: l.callbackHandler(responses, done, formPost), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer func() {
			// Lets the handler tell the browser how the login ended.
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
	}
	defer close(done) // before the shutdown: it releases handlers still waiting to deliver

	l.showLoginURL(authURL)
	if l.cfg.Prompter != nil {
		go l.promptForCode(responses, done)
	}

	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the authorization code: %w", ctx.Err())
	case resp := <-responses:
		if resp.result != nil && l.cfg.Prompter != nil {
			fmt.Fprintln(l.out) // ends the paste prompt's line
		}
		tok, err := l.complete(ctx, a, redirectURI, resp.params, resp.checkState)
		if resp.result != nil {
			resp.result <- err
		}
		return tok, err
	}
}

// showLoginURL opens the browser and prints the URL on a line of its own, for the user (or a test)
// to open it elsewhere.
func (l *login) showLoginURL(authURL string) {
	opened := false
	if !l.cfg.SkipBrowser {
		if err := l.openURL(authURL); err != nil {
			fmt.Fprintf(l.out, "Could not open a browser: %v\n", err)
		} else {
			opened = true
		}
	}
	if !opened || !l.cfg.SkipPrintLoginURL {
		fmt.Fprintf(l.out, "Log in by visiting this link:\n\n%s\n\n", authURL)
	}
}

// promptForCode reads a pasted code or redirect URL. When the login ends another way, the read is
// left pending: a terminal read cannot be interrupted.
func (l *login) promptForCode(responses chan<- authResponse, done <-chan struct{}) {
	for {
		line, err := l.cfg.Prompter.ReadLine(pastePrompt)
		if err != nil {
			return
		}
		if line == "" {
			continue
		}
		resp := authResponse{params: url.Values{"code": {line}}}
		if u, err := url.Parse(line); err == nil && u.Scheme != "" && u.Query().Has("code") {
			resp = authResponse{params: u.Query(), checkState: true}
		}
		select {
		case responses <- resp:
		case <-done:
		}
		return
	}
}

// callbackHandler serves the redirect URI: GET with the response in the query, or, with form_post,
// a POST of the issuer's page (after a CORS preflight, since that page's script sends it).
func (l *login) callbackHandler(responses chan<- authResponse, done <-chan struct{}, formPost bool) http.Handler {
	issuerOrigin := ""
	if u, err := url.Parse(l.cfg.Issuer); err == nil {
		issuerOrigin = u.Scheme + "://" + u.Host
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != callbackPath {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		var params url.Values
		switch {
		case r.Method == http.MethodGet:
			params = r.URL.Query()
		case formPost && r.Method == http.MethodOptions:
			if r.Header.Get("Origin") != issuerOrigin || r.Header.Get("Access-Control-Request-Method") != http.MethodPost {
				l.logf("refused a preflight request to the callback from origin %q", r.Header.Get("Origin"))
				http.Error(w, "forbidden", http.StatusForbidden)
				return
			}
			w.Header().Set("Access-Control-Allow-Origin", issuerOrigin)
			w.Header().Set("Access-Control-Allow-Methods", http.MethodPost)
			if r.Header.Get("Access-Control-Request-Private-Network") == "true" {
				w.Header().Set("Access-Control-Allow-Private-Network", "true")
			}
			w.WriteHeader(http.StatusNoContent)
			return
		case formPost && r.Method == http.MethodPost:
			if origin := r.Header.Get("Origin"); origin != "" {
				if origin != issuerOrigin {
					l.logf("refused a response posted to the callback from origin %q", origin)
					http.Error(w, "forbidden", http.StatusForbidden)
					return
				}
				w.Header().Set("Access-Control-Allow-Origin", issuerOrigin)
			}
			r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
			if err := r.ParseForm(); err != nil {
				http.Error(w, "cannot parse the form", http.StatusBadRequest)
				return
			}
			params = r.PostForm
		default:
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}

		result := make(chan error, 1)
		select {
		case responses <- authResponse{params: params, checkState: true, result: result}:
		case <-done:
			http.Error(w, "This login has already ended.", http.StatusGone)
			return
		case <-r.Context().Done():
			return
		}
		var err error
		select {
		case err = <-result:
		case <-done:
			err = errors.New("the login ended")
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, "Login failed: %s\n", strings.TrimSpace(err.Error()))
			return
		}
		fmt.Fprintln(w, "You have been logged in and may now close this tab.")
	})
}
