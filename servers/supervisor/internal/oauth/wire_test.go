package oauth

// Values that clients, browsers and operators see, which these tests pin from the outside.
const (
	// maxRequestBody is the largest request body the endpoints read.
	maxRequestBody = 1 << 20
	// The kinds of stored state, as the storage.pinniped.dev/type label names them.
	typeAuthcode     = "authcode"
	typeAccessToken  = "access-token"
	typeRefreshToken = "refresh-token"
	typePKCE         = "pkce"
	typeOIDC         = "oidc"
	// Token exchange (RFC 8693) token types.
	tokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"
	tokenTypeJWT         = "urn:ietf:params:oauth:token-type:jwt"
	// The headers of the cli_password flow.
	usernameHeader = "Pinniped-Username"
	passwordHeader = "Pinniped-Password"
	// loginBurst is how many password attempts a user may make at once.
	loginBurst = 10
	// The err parameter of the login form's URL after a failed attempt.
	loginErrorCredentials = "login_error"
	loginErrorTooMany     = "too_many_attempts"
	// maxRevocationAttempts is how many garbage collections try to revoke a login's upstream
	// tokens before its Secret is deleted anyway.
	maxRevocationAttempts = 3
)
