package sessions

import (
	"testing"

	"k8s.io/apimachinery/pkg/labels"
)

// The Supervisor's informers cache everything of its namespace but the sessions' records.
func TestNotSessionsSelector(t *testing.T) {
	selector, err := labels.Parse(NotSessionsSelector)
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range kinds {
		if selector.Matches(labels.Set{TypeLabel: kind, RequestIDLabel: "r"}) {
			t.Errorf("the selector matches a %s record", kind)
		}
	}
	for _, set := range []labels.Set{nil, {"app": "supervisor"}, {TypeLabel: "oidc-client-secret"}} {
		if !selector.Matches(set) {
			t.Errorf("the selector leaves out an object labelled %v", set)
		}
	}
}
