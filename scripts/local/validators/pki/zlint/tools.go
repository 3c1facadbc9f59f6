//go:build tools

// Package tools only names the command this module exists to build, so `go mod tidy` keeps its
// requirements.
package tools

import _ "github.com/zmap/zlint/v3/cmd/zlint"
