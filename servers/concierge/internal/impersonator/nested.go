package impersonator

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// reservedExtraSuffix marks the user extras that only the proxy sets.
const reservedExtraSuffix = ".impersonation-proxy.concierge.pinniped.dev"

// OriginalUserInfoExtraKey is the extra through which a nested impersonation tells the
// kube-apiserver (and so its audit log) who asked for it: the authenticated user, as the JSON of
// an authentication.k8s.io/v1 UserInfo. The audit event then names all three identities: that
// user, the impersonated one, and the Concierge's ServiceAccount.
const OriginalUserInfoExtraKey = "original-user-info" + reservedExtraSuffix

type originalUserKey struct{}

// withOriginalUser remembers the authenticated user of a request that asks to impersonate
// someone (kubectl --as), before the impersonation filter replaces it with the one asked for.
func withOriginalUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(authenticationv1.ImpersonateUserHeader) != "" {
			if u, ok := genericapirequest.UserFrom(r.Context()); ok {
				r = r.WithContext(context.WithValue(r.Context(), originalUserKey{}, u))
			}
		}
		next.ServeHTTP(w, r)
	})
}

// withOriginalUserInfo returns u as it is forwarded: with OriginalUserInfoExtraKey added when u
// is the result of a nested impersonation. No client may set an extra of the reserved suffix
// itself, as its own or through impersonation, even where RBAC would let it, and in no case: the
// kube-apiserver reads extra keys from Impersonate-Extra-* header names, which are
// case-insensitive, so it lowercases them.
func withOriginalUserInfo(ctx context.Context, u user.Info) (user.Info, error) {
	for k := range u.GetExtra() {
		if strings.HasSuffix(strings.ToLower(k), reservedExtraSuffix) {
			return nil, fmt.Errorf("the user extra %q is reserved for the impersonation proxy", k)
		}
	}
	original, ok := ctx.Value(originalUserKey{}).(user.Info)
	if !ok {
		return u, nil
	}
	info := authenticationv1.UserInfo{Username: original.GetName(), UID: original.GetUID(), Groups: original.GetGroups()}
	if len(original.GetExtra()) > 0 {
		info.Extra = make(map[string]authenticationv1.ExtraValue, len(original.GetExtra()))
		for k, v := range original.GetExtra() {
			info.Extra[k] = v
		}
	}
	js, err := json.Marshal(info)
	if err != nil {
		return nil, fmt.Errorf("recording the original user: %w", err)
	}
	extra := maps.Clone(u.GetExtra())
	if extra == nil {
		extra = map[string][]string{}
	}
	extra[OriginalUserInfoExtraKey] = []string{string(js)}
	return &user.DefaultInfo{Name: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: extra}, nil
}
