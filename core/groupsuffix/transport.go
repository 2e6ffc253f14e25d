package groupsuffix

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/transport"
	"sigs.k8s.io/yaml"
)

const (
	mediaTypeJSON      = "application/json"
	mediaTypeProtobuf  = "application/vnd.kubernetes.protobuf"
	mediaTypeCBOR      = "application/cbor"
	mediaTypeApply     = "application/apply-patch+yaml"
	mediaTypeJSONPatch = "application/json-patch+json"
)

// Transport returns a client-go transport wrapper, for rest.Config.Wrap, that lets clients written
// against the default "*.pinniped.dev" groups talk to servers that use suffix instead. It renames
// our groups in request paths and bodies, and renames them back in response bodies and watch
// streams. The rewriting works on JSON: responses are asked for as JSON, and a protobuf request
// body that names one of our groups is refused (bodies in other formats pass unchanged).
// With the default suffix the wrapped transport is returned as is. An invalid suffix makes every
// request fail with the validation error.
func Transport(suffix string) transport.WrapperFunc {
	return func(next http.RoundTripper) http.RoundTripper {
		if suffix == Default {
			return next
		}
		return &roundTripper{
			next:       next,
			invalid:    Validate(suffix),
			toServer:   newReplacer(suffix),
			fromServer: newUnreplacer(suffix),
		}
	}
}

type roundTripper struct {
	next       http.RoundTripper
	invalid    error
	toServer   rewriter
	fromServer rewriter
}

var _ utilnet.RoundTripperWrapper = (*roundTripper)(nil)

// WrappedRoundTripper lets client-go reach the transport underneath (for TLS config and
// connection management).
func (rt *roundTripper) WrappedRoundTripper() http.RoundTripper { return rt.next }

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if rt.invalid != nil {
		return nil, rt.invalid
	}
	out := req.Clone(req.Context())
	out.URL.Path = rt.toServer.path(out.URL.Path)
	if out.URL.RawPath != "" {
		out.URL.RawPath = rt.toServer.path(out.URL.RawPath)
	}
	if accept := out.Header.Get("Accept"); accept != "" {
		out.Header.Set("Accept", jsonAccept(accept))
	}
	if err := rt.rewriteRequestBody(out); err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}

	resp, err := rt.next.RoundTrip(out)
	if err != nil || !rewritableResponse(out, resp) {
		return resp, err
	}
	if isWatch(out) && resp.StatusCode == http.StatusOK {
		resp.Body = newWatchStream(resp.Body, rt.fromServer)
		return resp, nil
	}
	if err := rt.rewriteResponseBody(resp); err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	return resp, nil
}

// path renames the group in an API path ("/apis/<group>/..."), which may follow a path prefix.
func (r rewriter) path(p string) string {
	segments := strings.Split(p, "/")
	for i := 0; i+1 < len(segments); i++ {
		if segments[i] != "apis" {
			continue
		}
		if mapped, ok := r.mapGroup(segments[i+1]); ok {
			segments[i+1] = mapped
			return strings.Join(segments, "/")
		}
	}
	return p
}

// jsonAccept replaces binary media types in an Accept header with JSON, keeping their parameters
// (aggregated discovery asks for "...;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList").
func jsonAccept(accept string) string {
	var out []string
	seen := map[string]bool{}
	for _, item := range strings.Split(accept, ",") {
		item = strings.TrimSpace(item)
		mediaType, params, _ := strings.Cut(item, ";")
		switch strings.TrimSpace(mediaType) {
		case mediaTypeProtobuf, mediaTypeCBOR:
			item = mediaTypeJSON
			if params != "" {
				item += ";" + params
			}
		}
		if !seen[item] {
			seen[item] = true
			out = append(out, item)
		}
	}
	return strings.Join(out, ",")
}

func (rt *roundTripper) rewriteRequestBody(req *http.Request) error {
	if req.Body == nil || req.Body == http.NoBody {
		return nil
	}
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return fmt.Errorf("reading request body: %w", err)
	}
	if bytes.Contains(body, rt.toServer.needle) {
		var rewrite bool
		switch mediaType(req.Header.Get("Content-Type")) {
		case mediaTypeProtobuf:
			// Decoding it would need client-go's scheme of every built-in API, whose start-up
			// cost the CLI would pay on every kubectl call; our clients send JSON, and sending
			// the body unchanged would name groups the server does not serve.
			return errProtobufBody
		case mediaTypeApply:
			// Apply patches are YAML, usually written as JSON (which is YAML too); JSON stays valid.
			if body, err = yaml.YAMLToJSON(body); err != nil {
				return fmt.Errorf("decoding apply patch: %w", err)
			}
			rewrite = true
		case mediaTypeJSONPatch:
			if body, err = rt.toServer.rewriteJSONPatch(body); err != nil {
				return fmt.Errorf("rewriting API groups in JSON patch: %w", err)
			}
		default:
			rewrite = isJSON(req.Header.Get("Content-Type"))
		}
		if rewrite {
			if body, err = rt.toServer.rewriteJSON(body); err != nil {
				return fmt.Errorf("rewriting API groups in request body: %w", err)
			}
		}
	}
	setBody(req, body)
	return nil
}

func setBody(req *http.Request, body []byte) {
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
}

// errProtobufBody refuses a protobuf request body that names our groups: only JSON is rewritten.
var errProtobufBody = errors.New("a protobuf request body that names API groups with a suffix cannot be rewritten: send JSON (rest.Config ContentType application/json)")

// rewritableResponse excludes responses that are not plain API documents: protocol upgrades
// (exec, attach, port-forward), compressed bodies, proxied traffic and non-JSON content.
func rewritableResponse(req *http.Request, resp *http.Response) bool {
	if resp.Body == nil || resp.StatusCode == http.StatusSwitchingProtocols {
		return false
	}
	if resp.Header.Get("Content-Encoding") != "" || !isJSON(resp.Header.Get("Content-Type")) {
		return false
	}
	for _, segment := range strings.Split(req.URL.Path, "/") {
		if segment == "proxy" {
			return false
		}
	}
	return true
}

func (rt *roundTripper) rewriteResponseBody(resp *http.Response) error {
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return fmt.Errorf("reading response body: %w", err)
	}
	if len(body) > 0 {
		if body, err = rt.fromServer.rewriteJSON(body); err != nil {
			return fmt.Errorf("rewriting API groups in response body: %w", err)
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	if resp.Header.Get("Content-Length") != "" {
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	}
	return nil
}

// isWatch recognises watch requests: "?watch=true" or the legacy ".../watch/..." paths.
func isWatch(req *http.Request) bool {
	if w := req.URL.Query().Get("watch"); w == "true" || w == "1" {
		return true
	}
	segments := strings.Split(req.URL.Path, "/")
	for i, segment := range segments {
		if segment == "api" && i+2 < len(segments) && segments[i+2] == "watch" {
			return true
		}
		if segment == "apis" && i+3 < len(segments) && segments[i+3] == "watch" {
			return true
		}
	}
	return false
}

func mediaType(contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ""
	}
	return mt
}

// isJSON accepts application/json and the JSON patch flavours (application/merge-patch+json, ...).
func isJSON(contentType string) bool {
	mt := mediaType(contentType)
	return mt == mediaTypeJSON || strings.HasSuffix(mt, "+json")
}
