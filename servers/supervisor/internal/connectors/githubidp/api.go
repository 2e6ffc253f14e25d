package githubidp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

const (
	// pageSize is the largest page GitHub's list endpoints serve.
	pageSize = 100
	// maxPages bounds a listing, so that a server that always links a next page cannot keep
	// a login waiting forever: 100 pages of 100 is far beyond any real membership.
	maxPages = 100
)

// apiClient makes REST calls as one user.
type apiClient struct {
	http  *http.Client
	base  string
	token string
}

type apiUser struct {
	Login string `json:"login"`
	ID    int64  `json:"id"`
}

type apiOrg struct {
	Login string `json:"login"`
}

type apiTeam struct {
	Name         string  `json:"name"`
	Slug         string  `json:"slug"`
	Organization *apiOrg `json:"organization"`
	Parent       *struct {
		Name         string  `json:"name"`
		Slug         string  `json:"slug"`
		Organization *apiOrg `json:"organization"`
	} `json:"parent"`
}

// team is a team with its organization's login.
type team struct{ org, slug, name string }

func (c apiClient) user(ctx context.Context) (*apiUser, error) {
	var u apiUser
	if _, err := c.get(ctx, c.base+"/user", &u); err != nil {
		return nil, fmt.Errorf("github: fetching the authenticated user: %w", err)
	}
	if u.ID <= 0 {
		return nil, errors.New(`github: fetching the authenticated user: the "id" attribute is missing`)
	}
	if u.Login == "" {
		return nil, errors.New(`github: fetching the authenticated user: the "login" attribute is missing`)
	}
	return &u, nil
}

func (c apiClient) orgs(ctx context.Context) ([]string, error) {
	var logins []string
	err := c.list(ctx, "/user/orgs", func(raw json.RawMessage) error {
		var orgs []apiOrg
		if err := json.Unmarshal(raw, &orgs); err != nil {
			return err
		}
		for _, o := range orgs {
			if o.Login == "" {
				return errors.New(`an organization is missing the "login" attribute`)
			}
			logins = append(logins, o.Login)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("github: fetching the user's organizations: %w", err)
	}
	return logins, nil
}

// teams lists the user's teams, each followed by its parent team if it has one: membership of a
// nested team counts as membership of its parent.
func (c apiClient) teams(ctx context.Context) ([]team, error) {
	var teams []team
	err := c.list(ctx, "/user/teams", func(raw json.RawMessage) error {
		var page []apiTeam
		if err := json.Unmarshal(raw, &page); err != nil {
			return err
		}
		for _, t := range page {
			if t.Organization == nil || t.Organization.Login == "" {
				return fmt.Errorf(`team %q is missing its organization's "login" attribute`, t.Slug)
			}
			if t.Name == "" || t.Slug == "" {
				return errors.New(`a team is missing the "name" or "slug" attribute`)
			}
			teams = append(teams, team{org: t.Organization.Login, slug: t.Slug, name: t.Name})
			if p := t.Parent; p != nil {
				if p.Name == "" || p.Slug == "" {
					return fmt.Errorf(`the parent of team %q is missing the "name" or "slug" attribute`, t.Slug)
				}
				// A parent is in the same organization; GitHub may leave it out of the parent.
				org := t.Organization.Login
				if p.Organization != nil && p.Organization.Login != "" {
					org = p.Organization.Login
				}
				teams = append(teams, team{org: org, slug: p.Slug, name: p.Name})
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("github: fetching the user's teams: %w", err)
	}
	return teams, nil
}

// list walks the pages of a list endpoint through the Link header's rel="next", handing each
// page's body to each.
func (c apiClient) list(ctx context.Context, path string, each func(json.RawMessage) error) error {
	next := fmt.Sprintf("%s%s?per_page=%d", c.base, path, pageSize)
	for range maxPages {
		var raw json.RawMessage
		resp, err := c.get(ctx, next, &raw)
		if err != nil {
			return err
		}
		if err := each(raw); err != nil {
			return err
		}
		next = nextLink(resp.Header.Get("Link"))
		if next == "" {
			return nil
		}
		// The token goes only to the API it was issued for.
		if !strings.HasPrefix(next, c.base+"/") {
			return fmt.Errorf("the next page %q is not below %s", next, c.base)
		}
	}
	return fmt.Errorf("more than %d pages", maxPages)
}

// nextLink is the rel="next" URL of an RFC 8288 Link header, or "".
func nextLink(header string) string {
	for _, link := range strings.Split(header, ",") {
		target, params, ok := strings.Cut(strings.TrimSpace(link), ";")
		if !ok || !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
			continue
		}
		for _, p := range strings.Split(params, ";") {
			name, value, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(name, "rel") && strings.Trim(value, `"`) == "next" {
				return target[1 : len(target)-1]
			}
		}
	}
	return ""
}

func (c apiClient) get(ctx context.Context, rawURL string, into any) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", APIVersion)
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s: reading the response: %w", rawURL, err)
	}
	if resp.StatusCode != http.StatusOK {
		var apiErr struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(body, &apiErr) == nil && apiErr.Message != "" {
			return nil, &APIError{StatusCode: resp.StatusCode, Message: apiErr.Message}
		}
		return nil, &APIError{StatusCode: resp.StatusCode, Message: http.StatusText(resp.StatusCode)}
	}
	if err := json.Unmarshal(body, into); err != nil {
		return nil, fmt.Errorf("GET %s: decoding the response: %w", rawURL, err)
	}
	return resp, nil
}

// APIError is a non-200 answer of the GitHub API, e.g. 401 "Bad credentials" for a revoked
// token.
type APIError struct {
	StatusCode int
	Message    string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("GitHub API answered %d: %s", e.StatusCode, e.Message)
}
