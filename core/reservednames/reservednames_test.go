package reservednames

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRefused(t *testing.T) {
	none := Exceptions{}
	for _, tt := range []struct {
		name     string
		allow    Exceptions
		username string
		groups   []string
		want     string
	}{
		{name: "ordinary user", allow: none, username: "pinny", groups: []string{"seals", "systems:team", "sys"}},
		{name: "no groups", allow: none, username: "pinny"},
		{name: "reserved username", allow: none, username: "system:admin", want: `username "system:admin" is reserved by Kubernetes`},
		{name: "reserved group", allow: none, username: "pinny", groups: []string{"seals", "system:masters"}, want: `group "system:masters" is reserved by Kubernetes`},
		{name: "service account name", allow: none, username: "system:serviceaccount:kube-system:default", want: `username "system:serviceaccount:kube-system:default" is reserved by Kubernetes`},
		{name: "any case", allow: none, username: "pinny", groups: []string{"SYSTEM:masters"}, want: `group "SYSTEM:masters" is reserved by Kubernetes`},
		{name: "bare prefix", allow: none, username: "system:", want: `username "system:" is reserved by Kubernetes`},
		{name: "group allowed exactly", allow: Exceptions{Groups: []string{"system:monitoring"}}, username: "pinny", groups: []string{"system:monitoring"}},
		{name: "exception is case-sensitive", allow: Exceptions{Groups: []string{"system:monitoring"}}, username: "pinny", groups: []string{"System:monitoring"}, want: `group "System:monitoring" is reserved by Kubernetes`},
		{name: "group exception does not allow the username", allow: Exceptions{Groups: []string{"system:admin"}}, username: "system:admin", want: `username "system:admin" is reserved by Kubernetes`},
		{name: "username exception does not allow the group", allow: Exceptions{Usernames: []string{"system:masters"}}, username: "pinny", groups: []string{"system:masters"}, want: `group "system:masters" is reserved by Kubernetes`},
		{name: "username allowed, other group refused", allow: Exceptions{Usernames: []string{"system:robot"}}, username: "system:robot", groups: []string{"system:masters"}, want: `group "system:masters" is reserved by Kubernetes`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.allow.Refused(tt.username, tt.groups))
		})
	}
}

func TestValidate(t *testing.T) {
	require.NoError(t, Exceptions{}.Validate())
	require.NoError(t, Exceptions{Usernames: []string{"system:robot"}, Groups: []string{"system:monitoring"}}.Validate())
	err := Exceptions{Usernames: []string{"admin"}, Groups: []string{"system:*"}}.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `usernames: "admin" does not start with "system:"`)
	assert.Contains(t, err.Error(), `groups: "system:*": exceptions are exact names, not patterns`)
}
