package admin

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"strings"
)

var (
	//go:embed page.html
	pageTemplate string
	//go:embed page.js
	pageScript string
	//go:embed page.css
	pageStyle string
)

// pageHTML is the page with its script and style inlined, and pageCSP allows exactly
// those two by hash: nothing else may run or load, and the page may talk only to its
// own origin.
var pageHTML, pageCSP = buildPage()

// apiCSP is the policy of the JSON responses: nothing at all.
const apiCSP = "default-src 'none'; frame-ancestors 'none'"

func buildPage() ([]byte, string) {
	html := strings.NewReplacer("/*STYLE*/", pageStyle, "/*SCRIPT*/", pageScript).Replace(pageTemplate)
	hash := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}
	csp := "default-src 'none'; script-src " + hash(pageScript) + "; style-src " + hash(pageStyle) +
		"; connect-src 'self'; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	return []byte(html), csp
}
