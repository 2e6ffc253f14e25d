package hoststate

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	"sealion.dev/providers/internal/command"
)

// iptablesPrograms are the front ends whose rules are cleaned. The kubelet and the kube-proxy
// image use the nf_tables backend, like Debian's default iptables.
var iptablesPrograms = []string{"iptables", "ip6tables"}

var iptablesTables = []string{"filter", "nat", "mangle", "raw"}

func isOwnedChain(name string) bool {
	for _, p := range ownedChainPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// ruleset is the parsed `iptables -S` output of one table.
type ruleset struct {
	chains []string   // from "-N name"
	rules  [][]string // "-A chain ..." lines split into words
}

func parseRules(out string) (ruleset, error) {
	var rs ruleset
	for _, line := range strings.Split(out, "\n") {
		words, err := splitWords(line)
		if err != nil {
			return rs, fmt.Errorf("parsing iptables rule %q: %w", line, err)
		}
		switch {
		case len(words) >= 2 && words[0] == "-N":
			rs.chains = append(rs.chains, words[1])
		case len(words) >= 2 && words[0] == "-A":
			rs.rules = append(rs.rules, words)
		}
	}
	return rs, nil
}

// splitWords splits an `iptables -S` line, which double-quotes arguments with spaces.
func splitWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord, quoted, escaped := false, false, false
	for _, r := range line {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case r == '\\' && quoted:
			escaped = true
		case r == '"':
			quoted = !quoted
			inWord = true
		case (r == ' ' || r == '\t') && !quoted:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("unterminated quote")
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// jumpsTo reports whether a rule's target (-j or -g) is one of chains.
func jumpsTo(rule []string, chains []string) bool {
	for i := 0; i+1 < len(rule); i++ {
		if (rule[i] == "-j" || rule[i] == "-g") && slices.Contains(chains, rule[i+1]) {
			return true
		}
	}
	return false
}

func listRules(ctx context.Context, run command.Runner, program, table string) (ruleset, error) {
	out, err := run.Output(ctx, program, "-w", "-t", table, "-S")
	if err != nil {
		return ruleset{}, err
	}
	return parseRules(string(out))
}

func availablePrograms() []string {
	var found []string
	for _, p := range iptablesPrograms {
		if _, err := exec.LookPath(p); err == nil {
			found = append(found, p)
		}
	}
	return found
}

// ownedChains lists the owned chains as "<program> <table> <chain>". A table the kernel does
// not offer is skipped.
func ownedChains() ([]string, error) {
	var all []string
	for _, program := range availablePrograms() {
		for _, table := range iptablesTables {
			rs, err := listRules(context.Background(), command.Runner{}, program, table)
			if err != nil {
				continue
			}
			for _, c := range rs.chains {
				if isOwnedChain(c) {
					all = append(all, program+" "+table+" "+c)
				}
			}
		}
	}
	return all, nil
}

// removeNewChains deletes owned chains missing from before: first every rule elsewhere that
// jumps to them, then their rules, then the chains.
func removeNewChains(ctx context.Context, run command.Runner, before []string) []error {
	var errs []error
	for _, program := range availablePrograms() {
		for _, table := range iptablesTables {
			rs, err := listRules(ctx, run, program, table)
			if err != nil {
				continue
			}
			var doomed []string
			for _, c := range rs.chains {
				if isOwnedChain(c) && !slices.Contains(before, program+" "+table+" "+c) {
					doomed = append(doomed, c)
				}
			}
			if len(doomed) == 0 {
				continue
			}
			for _, rule := range rs.rules {
				if !slices.Contains(doomed, rule[1]) && jumpsTo(rule, doomed) {
					args := append([]string{"-w", "-t", table, "-D"}, rule[1:]...)
					if err := run.Run(ctx, program, args...); err != nil {
						errs = append(errs, err)
					}
				}
			}
			for _, c := range doomed {
				if err := run.Run(ctx, program, "-w", "-t", table, "-F", c); err != nil {
					errs = append(errs, err)
				}
			}
			for _, c := range doomed {
				if err := run.Run(ctx, program, "-w", "-t", table, "-X", c); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errs
}
