package integration

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
)

// TestWhoAmIRequest asks the Concierge, through the aggregation layer, who the admin is.
func TestWhoAmIRequest(t *testing.T) {
	out, err := env.kubectl(context.Background(), []byte(`{"apiVersion":"identity.concierge.pinniped.dev/v1alpha1","kind":"WhoAmIRequest"}`),
		"create", "-f", "-", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Status struct {
			KubernetesUserInfo struct {
				User struct {
					Username string   `json:"username"`
					Groups   []string `json:"groups"`
				} `json:"user"`
			} `json:"kubernetesUserInfo"`
		} `json:"status"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	u := resp.Status.KubernetesUserInfo.User
	if u.Username == "" || !slices.Contains(u.Groups, "system:masters") {
		t.Errorf("WhoAmIRequest says %+v, want the admin in system:masters", u)
	}
}
