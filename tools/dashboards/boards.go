package main

// rate is the window of every rate: Grafana's, at least four scrape intervals.
const rate = "[$__rate_interval]"

var dashboards = []board{concierge, supervisor}

var concierge = board{
	chart: "servers/concierge/deploy/chart", uid: "pinniped-concierge", title: "Pinniped Concierge",
	description: "Exchanges, strategies and the impersonation proxy of the Concierge (docs/reference/metrics.md).",
	rows: []row{
		{"Exchanges", []panel{
			{title: "Exchanges", unit: "reqps", description: "TokenCredentialRequests by authenticator kind and result.",
				queries: []query{{`sum by (authenticator_kind, result) (rate(pinniped_concierge_token_credential_requests_total` + rate + `))`, "{{authenticator_kind}} {{result}}"}}},
			{title: "Refusals by reason", unit: "reqps", description: "not_authenticated is users' credentials; authenticator_error and issuer_error are ours or an issuer's to fix.",
				queries: []query{{`sum by (reason) (rate(pinniped_concierge_token_credential_request_failures_total` + rate + `))`, "{{reason}}"}}},
			{title: "Exchange latency", unit: "s", description: "Time to authenticate a token and issue a credential.",
				queries: []query{
					{`histogram_quantile(0.5, sum by (le) (rate(pinniped_concierge_token_credential_request_duration_seconds_bucket` + rate + `)))`, "p50"},
					{`histogram_quantile(0.99, sum by (le) (rate(pinniped_concierge_token_credential_request_duration_seconds_bucket` + rate + `)))`, "p99"},
				}},
			{title: "Requests to issuers and webhooks", unit: "reqps", description: "Key set fetches of JWTAuthenticators and TokenReviews of WebhookAuthenticators while serving exchanges.",
				queries: []query{{`sum by (authenticator_kind, result) (rate(pinniped_concierge_authenticator_upstream_requests_total` + rate + `))`, "{{authenticator_kind}} {{result}}"}}},
		}},
		{"Strategies and authenticators", []panel{
			{title: "Working strategies", single: true, description: "Strategies of the CredentialIssuer that report Success; 0 means no exchange can succeed.",
				queries: []query{{`count(max by (strategy) (pinniped_concierge_strategy_status{status="Success"}))`, "strategies"}}},
			{title: "Authenticators in Error", single: true, description: "An authenticator in phase Error refuses every exchange.",
				queries: []query{{`sum(max by (kind) (pinniped_concierge_authenticators{phase="Error"}))`, "in Error"}}},
			{title: "Signer expires in", single: true, unit: "s", description: "Time left before the earliest CA that signs client certificates expires.",
				queries: []query{{`min(pinniped_concierge_signer_expiry_timestamp_seconds) - time()`, "expires in"}}},
			{title: "Certificates issued", single: true, unit: "reqps", description: "Client certificates per second, all strategies.",
				queries: []query{{`sum(rate(pinniped_concierge_client_certificates_issued_total` + rate + `))`, "issued"}}},
			{title: "Certificates by strategy", unit: "reqps", description: "Client certificates issued by the strategy that signed them.",
				queries: []query{{`sum by (strategy, result) (rate(pinniped_concierge_client_certificates_issued_total` + rate + `))`, "{{strategy}} {{result}}"}}},
			{title: "Certificate issue latency (p99)", unit: "s", description: "Microseconds in process; the CSR API's round trip for CertificateSigningRequest.",
				queries: []query{{`histogram_quantile(0.99, sum by (le, strategy) (rate(pinniped_concierge_client_certificate_issue_duration_seconds_bucket` + rate + `)))`, "{{strategy}}"}}},
		}},
		{"Impersonation proxy", []panel{
			{title: "Proxy requests by code", unit: "reqps", description: "101 is an exec, attach or port-forward stream.",
				queries: []query{{`sum by (code) (rate(pinniped_concierge_impersonation_proxy_requests_total` + rate + `))`, "{{code}}"}}},
			{title: "Proxy latency (p99)", unit: "s", description: "Requests that are not long-running, by verb.",
				queries: []query{{`histogram_quantile(0.99, sum by (le, verb) (rate(pinniped_concierge_impersonation_proxy_request_duration_seconds_bucket` + rate + `)))`, "{{verb}}"}}},
			{title: "Proxy requests in flight", unit: "short", description: "short is what the in-flight limits bound.",
				queries: []query{{`sum by (kind) (pinniped_concierge_impersonation_proxy_requests_in_flight)`, "{{kind}}"}}},
			{title: "Refused by the in-flight limits", unit: "reqps", description: "Any rise under normal load means a limit is too low.",
				queries: []query{{`sum by (queue) (rate(pinniped_requests_rejected_total{queue=~"impersonation-proxy-.*"}` + rate + `))`, "{{queue}}"}}},
		}},
	},
}

var supervisor = board{
	chart: "servers/supervisor/deploy/chart", uid: "pinniped-supervisor", title: "Pinniped Supervisor",
	description: "Logins, token requests, upstream identity providers and sessions of the Supervisor (docs/reference/metrics.md).",
	rows: []row{
		{"Logins and tokens", []panel{
			{title: "Logins completed", single: true, unit: "reqps", description: "Authorization codes redeemed: browser and CLI logins that ended with tokens.",
				queries: []query{{`sum(rate(pinniped_supervisor_token_requests_total{grant_type="authorization_code",result="success"}` + rate + `))`, "logins"}}},
			{title: "Users logged in", single: true, unit: "short", description: "Login sessions not yet expired, from the leader's last sweep.",
				queries: []query{{`max(pinniped_supervisor_session_records{type="oidc"})`, "sessions"}}},
			{title: "Token exchange errors", single: true, unit: "percentunit", description: "Share of token exchanges (a cluster's ID token) that fail.",
				queries: []query{{`sum(rate(pinniped_supervisor_token_requests_total{grant_type="token_exchange",result!="success"}` + rate + `)) / sum(rate(pinniped_supervisor_token_requests_total{grant_type="token_exchange"}` + rate + `))`, "errors"}}},
			{title: "Signing key age", single: true, unit: "s", description: "Age of the oldest FederationDomain signing key.",
				queries: []query{{`time() - min(pinniped_supervisor_signing_key_generated_timestamp_seconds)`, "age"}}},
			{title: "Token requests", unit: "reqps", description: "By grant and result: success, polled (a device poll still pending) or the OAuth error code.",
				queries: []query{{`sum by (grant_type, result) (rate(pinniped_supervisor_token_requests_total` + rate + `))`, "{{grant_type}} {{result}}"}}},
			{title: "Token requests by FederationDomain", unit: "reqps", description: "All grants, by FederationDomain and the session's identity provider type.",
				queries: []query{{`sum by (federation_domain, identity_provider_type) (rate(pinniped_supervisor_token_requests_total` + rate + `))`, "{{federation_domain}} {{identity_provider_type}}"}}},
			{title: "Token latency (p99)", unit: "s", description: "A refresh includes the upstream's check of the user.",
				queries: []query{{`histogram_quantile(0.99, sum by (le, grant_type) (rate(pinniped_supervisor_token_request_duration_seconds_bucket` + rate + `)))`, "{{grant_type}}"}}},
			{title: "Refused by the in-flight limits", unit: "reqps", description: "Any rise under normal load means a limit is too low.",
				queries: []query{{`sum by (queue) (rate(pinniped_requests_rejected_total{queue=~"supervisor-.*"}` + rate + `))`, "{{queue}}"}}},
		}},
		{"Upstream identity providers", []panel{
			{title: "Upstream calls", unit: "reqps", description: "refused: the upstream said no (a wrong password, a user gone); unavailable: it could not be reached.",
				queries: []query{{`sum by (identity_provider_type, operation, result) (rate(pinniped_supervisor_upstream_requests_total` + rate + `))`, "{{identity_provider_type}} {{operation}} {{result}}"}}},
			{title: "Upstream latency (p99)", unit: "s", description: "How long upstream identity providers take to answer.",
				queries: []query{{`histogram_quantile(0.99, sum by (le, identity_provider_type, operation) (rate(pinniped_supervisor_upstream_request_duration_seconds_bucket` + rate + `)))`, "{{identity_provider_type}} {{operation}}"}}},
		}},
		{"Sessions", []panel{
			{title: "Session records", unit: "short", description: "Records not yet expired, by type, from the leader's last sweep.",
				queries: []query{{`max by (type) (pinniped_supervisor_session_records)`, "{{type}}"}}},
			{title: "Garbage collection", unit: "short", description: "Expired records deleted and sweeps by result, per second.",
				queries: []query{
					{`sum(rate(pinniped_supervisor_session_records_collected_total` + rate + `))`, "records collected"},
					{`sum by (result) (rate(pinniped_supervisor_session_garbage_collections_total` + rate + `))`, "sweeps {{result}}"},
				}},
		}},
	},
}
