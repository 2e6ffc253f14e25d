package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
)

// chartDirs are the Helm charts released.
var chartDirs = []string{
	"servers/concierge/deploy/chart",
	"servers/supervisor/deploy/chart",
	"servers/local-user-authenticator/deploy/chart",
}

// The development image in the charts' values.yaml, which the release rewrites line by line so
// that the file keeps its comments (Helm packages values.yaml as written).
var (
	repositoryLine = regexp.MustCompile(`(?m)^(  repository: )` + regexp.QuoteMeta(devRepository) + `$`)
	tagLine        = regexp.MustCompile(`(?m)^(  tag: )dev$`)
)

// charts packages each chart at the release's version (the chart's version is the release's
// without its v; appVersion is the release's), with the image set to the release's.
func (r *release) charts(imageRef string) error {
	repository, digest, _ := strings.Cut(imageRef, "@")
	for _, dir := range chartDirs {
		ch, err := loader.Load(filepath.Join(r.repoRoot, dir))
		if err != nil {
			return fmt.Errorf("loading chart %s: %w", dir, err)
		}
		ch.Metadata.Version = strings.TrimPrefix(r.version, "v")
		ch.Metadata.AppVersion = r.version
		for _, f := range ch.Raw {
			if f.Name != chartutil.ValuesfileName {
				continue
			}
			if len(repositoryLine.FindAll(f.Data, -1)) != 1 || len(tagLine.FindAll(f.Data, -1)) != 1 {
				return fmt.Errorf("chart %s: values.yaml must have one line %q and one line %q for the release to set the image", dir, "  repository: "+devRepository, "  tag: dev")
			}
			f.Data = repositoryLine.ReplaceAll(f.Data, []byte("${1}"+repository))
			// The tag names the version; the digest, in a comment, is what the install YAMLs pin.
			f.Data = tagLine.ReplaceAll(f.Data, []byte(fmt.Sprintf("${1}%s # %s", r.version, digest)))
		}
		path, err := chartutil.Save(ch, r.out)
		if err != nil {
			return fmt.Errorf("packaging chart %s: %w", dir, err)
		}
		if err := redate(path, r.date); err != nil {
			return err
		}
	}
	return nil
}

// redate rewrites a packaged chart with every entry dated date and no gzip timestamp: Helm dates
// entries with the time of packaging, which would make every package differ.
func redate(path string, date time.Time) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return err
	}
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	zw.Header.Extra, zw.Header.Comment = zr.Header.Extra, zr.Header.Comment // Helm's marks
	tr, tw := tar.NewReader(zr), tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		h.ModTime, h.AccessTime, h.ChangeTime = date, time.Time{}, time.Time{}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, out.Bytes(), 0o644)
}
