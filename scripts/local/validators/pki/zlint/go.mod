// The zlint command line, pinned: install.sh builds it with `go install` from this module into
// .local/validators/pki/bin (GOPATH and GOCACHE under .local too). This module holds no code of its own.
module signing-pipeline/validators/zlint

go 1.25.0

require github.com/zmap/zlint/v3 v3.7.3

require (
	github.com/pelletier/go-toml v1.9.5 // indirect
	github.com/sirupsen/logrus v1.10.2 // indirect
	github.com/weppos/publicsuffix-go v0.50.4-0.20260821095816-b0fdb5c2d345 // indirect
	github.com/zmap/zcrypto v0.0.0-20260906180147-3ed30b1e9340 // indirect
	golang.org/x/crypto v0.55.0 // indirect
	golang.org/x/net v0.58.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)

// zlint v3.7.3 requires this pseudo-version of publicsuffix-go, which the Go module proxy we reach does not
// serve ("403: This module version is not available"), so a plain `go install ...zlint@v3.7.3` fails here.
// The nearest tagged release stands in. publicsuffix-go only feeds zlint's TLS dNSName lints (public
// suffix / TLD checks), which never apply to our certificates. Drop this line once the proxy serves it.
replace github.com/weppos/publicsuffix-go v0.50.4-0.20260821095816-b0fdb5c2d345 => github.com/weppos/publicsuffix-go v0.50.3
