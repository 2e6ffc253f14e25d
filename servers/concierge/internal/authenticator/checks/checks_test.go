package checks

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestList(t *testing.T) {
	tests := []struct {
		name       string
		build      func(l *List)
		wantOK     bool
		wantStatus map[string]metav1.ConditionStatus
	}{
		{
			name:       "all pass",
			build:      func(l *List) { l.Pass("A", "fine"); l.Pass("B", "fine") },
			wantOK:     true,
			wantStatus: map[string]metav1.ConditionStatus{"A": metav1.ConditionTrue, "B": metav1.ConditionTrue},
		},
		{
			name:       "failure then skipped",
			build:      func(l *List) { l.Pass("A", "fine"); l.Fail("B", "Broken", "bad %d", 1); l.Skip("C") },
			wantStatus: map[string]metav1.ConditionStatus{"A": metav1.ConditionTrue, "B": metav1.ConditionFalse, "C": metav1.ConditionUnknown},
		},
		{
			name: "fail and skip the rest",
			build: func(l *List) {
				l.Pass("A", "fine")
				l.FailAndSkipRest([]string{"A", "B", "C", "D"}, "B", "Broken", "bad")
			},
			wantStatus: map[string]metav1.ConditionStatus{"A": metav1.ConditionTrue, "B": metav1.ConditionFalse, "C": metav1.ConditionUnknown, "D": metav1.ConditionUnknown},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l List
			tt.build(&l)
			if l.OK() != tt.wantOK || (l.Err() == nil) != tt.wantOK {
				t.Errorf("OK() = %v, Err() = %v; want OK %v", l.OK(), l.Err(), tt.wantOK)
			}
			for typ, want := range tt.wantStatus {
				if c, ok := l.Get(typ); !ok || c.Status != want {
					t.Errorf("Get(%q) = %+v, %v; want status %s", typ, c, ok, want)
				}
			}
			if len(l) != len(tt.wantStatus) {
				t.Errorf("list has %d checks; want %d", len(l), len(tt.wantStatus))
			}
			conds := l.Conditions(7)
			if len(conds) != len(l) {
				t.Fatalf("Conditions() has %d entries; want %d", len(conds), len(l))
			}
			for i, c := range conds {
				if c.Type != l[i].Type || c.Reason != l[i].Reason || c.ObservedGeneration != 7 {
					t.Errorf("condition %d = %+v; want from %+v with generation 7", i, c, l[i])
				}
			}
		})
	}
}

func TestFailMessage(t *testing.T) {
	var l List
	l.Fail("B", "Broken", "bad %d", 1)
	if c, _ := l.Get("B"); c.Message != "bad 1" || c.Reason != "Broken" {
		t.Errorf("got %+v", c)
	}
	if err := l.Err(); err == nil || err.Error() != "authenticator configuration invalid: B (Broken): bad 1" {
		t.Errorf("Err() = %v", err)
	}
}
