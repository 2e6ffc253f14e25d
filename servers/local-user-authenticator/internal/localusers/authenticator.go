// Package localusers is the local-user-authenticator: a TokenReview webhook whose users are Secrets
// in one namespace. A Secret's name is the username, its "passwordHash" key holds a bcrypt hash of
// the password and its optional "groups" key a comma-separated group list. Clients present tokens
// of the form "username:password". It exists for tests and demos of webhook authentication.
package localusers

import (
	"errors"
	"strings"

	"golang.org/x/crypto/bcrypt"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
)

const (
	// DefaultNamespace is where users live unless configured otherwise.
	DefaultNamespace = "local-user-authenticator"
	// PasswordHashKey is the Secret data key holding the user's bcrypt password hash.
	PasswordHashKey = "passwordHash"
	// GroupsKey is the Secret data key holding the user's comma-separated groups.
	GroupsKey = "groups"
)

// unknownUserHash is the bcrypt hash (cost 10) of a random, discarded password. Checking the
// password of an unknown user against it makes that failure take as long as a wrong password,
// so response times do not reveal which users exist.
var unknownUserHash = []byte("$2a$10$FsNP3aNdBWnns4.1aKqujOAdwR0EJXhdje7/jQTpwKj8yzFUyycAW")

// User is an authenticated user.
type User struct {
	Username string
	Groups   []string
}

// Authenticator checks "username:password" tokens against the user Secrets of one namespace.
type Authenticator struct {
	secrets corev1listers.SecretNamespaceLister
}

// NewAuthenticator reads users through secrets, normally an informer-backed lister so that no
// request costs an API call.
func NewAuthenticator(secrets corev1listers.SecretNamespaceLister) *Authenticator {
	return &Authenticator{secrets: secrets}
}

// AuthenticateToken returns the user a token belongs to, or false. It never says why a token was
// rejected to the caller, and never logs the token or password.
func (a *Authenticator) AuthenticateToken(token string) (User, bool) {
	username, password, ok := strings.Cut(token, ":")
	if !ok || username == "" || password == "" {
		klog.V(2).InfoS("rejected token: not of the form username:password")
		return User{}, false
	}
	secret, err := a.secrets.Get(username)
	if err != nil {
		_ = bcrypt.CompareHashAndPassword(unknownUserHash, []byte(password))
		klog.V(2).InfoS("rejected token: no such user", "username", username)
		return User{}, false
	}
	err = bcrypt.CompareHashAndPassword(secret.Data[PasswordHashKey], []byte(password))
	switch {
	case errors.Is(err, bcrypt.ErrMismatchedHashAndPassword):
		klog.V(2).InfoS("rejected token: wrong password", "username", username)
		return User{}, false
	case err != nil:
		klog.InfoS("rejected token: user Secret has no usable "+PasswordHashKey, "username", username, "err", err)
		return User{}, false
	}
	return User{Username: username, Groups: parseGroups(string(secret.Data[GroupsKey]))}, true
}

// parseGroups splits a comma-separated list, trimming spaces and dropping empty entries.
func parseGroups(list string) []string {
	var groups []string
	for _, group := range strings.Split(list, ",") {
		if group = strings.TrimSpace(group); group != "" {
			groups = append(groups, group)
		}
	}
	return groups
}
