package providers

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckHostChangesAllowed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		explicit bool
		env      map[string]string
		allowed  bool
	}{
		{name: "nothing set", allowed: false},
		{name: "explicit option", explicit: true, allowed: true},
		{name: "CI=true", env: map[string]string{"CI": "true"}, allowed: true},
		{name: "CI=TRUE", env: map[string]string{"CI": "TRUE"}, allowed: true},
		{name: "CI=1 is not true", env: map[string]string{"CI": "1"}, allowed: false},
		{name: "SEALION_ALLOW_HOST_CHANGES=true", env: map[string]string{AllowHostChangesEnv: "true"}, allowed: true},
		{name: "SEALION_ALLOW_HOST_CHANGES=false", env: map[string]string{AllowHostChangesEnv: "false"}, allowed: false},
	}
	for _, tt := range tests {
		err := CheckHostChangesAllowed("kubeadm", tt.explicit, func(k string) string { return tt.env[k] })
		if (err == nil) != tt.allowed {
			t.Errorf("%s: got %v, want allowed=%v", tt.name, err, tt.allowed)
		}
		if err != nil {
			if !errors.Is(err, ErrHostChangesNotAllowed) {
				t.Errorf("%s: error does not wrap ErrHostChangesNotAllowed: %v", tt.name, err)
			}
			for _, want := range []string{"kubeadm provider", "SEALION_ALLOW_HOST_CHANGES=true", "CI=true"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s: error %q does not mention %q", tt.name, err, want)
				}
			}
		}
	}
}

func TestStepError(t *testing.T) {
	t.Parallel()
	cause := errors.New("kubelet did not start")
	err := error(&StepError{Cluster: "c1", Step: "kubeadm init", LogsDir: "/w/c1/logs", Err: cause})
	if want := `creating cluster "c1": step "kubeadm init" failed (logs kept in /w/c1/logs): kubelet did not start`; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err, want)
	}
	if !errors.Is(err, cause) {
		t.Error("StepError does not unwrap to its cause")
	}
	noLogs := &StepError{Cluster: "c1", Step: "validate name", Err: cause}
	if strings.Contains(noLogs.Error(), "logs kept") {
		t.Errorf("Error() without logs mentions them: %q", noLogs)
	}
}
