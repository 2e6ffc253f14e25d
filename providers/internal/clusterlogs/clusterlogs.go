// Package clusterlogs saves what the API server knows about a cluster's health into a directory:
// nodes, pods, events and the logs of every container. It works for any cluster
// reachable with a kubeconfig, so every provider can use it next to its own host logs.
package clusterlogs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Dump writes nodes.txt, pods.txt, events.txt and <namespace>/<pod>_<container>.log into dir:
// every namespace, since a failing test's own pods are usually what explains it. It writes what
// it can and returns every failure.
func Dump(ctx context.Context, client kubernetes.Interface, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating log directory: %w", err)
	}
	var errs []error
	add := func(what string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}

	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	add("listing nodes", err)
	if err == nil {
		add("writing nodes.txt", writeTable(filepath.Join(dir, "nodes.txt"), "NAME\tREADY\tVERSION\tINTERNAL-IP", func(row func(...string)) {
			for _, n := range nodes.Items {
				row(n.Name, nodeReady(n), n.Status.NodeInfo.KubeletVersion, internalIP(n))
			}
		}))
	}

	pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	add("listing pods", err)
	if err == nil {
		add("writing pods.txt", writeTable(filepath.Join(dir, "pods.txt"), "NAMESPACE\tNAME\tPHASE\tNODE\tRESTARTS\tREASON", func(row func(...string)) {
			for _, p := range pods.Items {
				restarts, reason := 0, p.Status.Reason
				for _, cs := range p.Status.ContainerStatuses {
					restarts += int(cs.RestartCount)
					if w := cs.State.Waiting; w != nil && reason == "" {
						reason = w.Reason
					}
				}
				row(p.Namespace, p.Name, string(p.Status.Phase), p.Spec.NodeName, fmt.Sprint(restarts), reason)
			}
		}))
		for _, p := range pods.Items {
			if err := os.MkdirAll(filepath.Join(dir, p.Namespace), 0o755); err != nil {
				add("creating a log directory", err)
				continue
			}
			for _, c := range p.Spec.Containers {
				data, err := client.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: c.Name}).DoRaw(ctx)
				if err != nil {
					data = []byte(fmt.Sprintf("(logs unavailable: %v)\n", err))
				}
				name := filepath.Join(dir, p.Namespace, p.Name+"_"+c.Name+".log")
				add("writing "+name, os.WriteFile(name, data, 0o644))
			}
		}
	}

	events, err := client.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	add("listing events", err)
	if err == nil {
		add("writing events.txt", writeTable(filepath.Join(dir, "events.txt"), "LAST-SEEN\tNAMESPACE\tOBJECT\tTYPE\tREASON\tMESSAGE", func(row func(...string)) {
			for _, e := range events.Items {
				row(e.LastTimestamp.UTC().Format("15:04:05"), e.Namespace, e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name,
					e.Type, e.Reason, strings.ReplaceAll(e.Message, "\n", " "))
			}
		}))
	}
	return errors.Join(errs...)
}

func writeTable(path, header string, rows func(row func(...string))) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(f, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, header)
	rows(func(cells ...string) { fmt.Fprintln(w, strings.Join(cells, "\t")) })
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func nodeReady(n corev1.Node) string {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return string(c.Status)
		}
	}
	return "Unknown"
}

func internalIP(n corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}
