#!/usr/bin/env bash
# install-hydra.sh: build ORY Hydra v2.3.0, the OpenID provider of the
# OpenID Connect tests (cmd/parley/oidc_hydra_test.go, web/test/oidc.test.mjs),
# into $HOME/go/bin/hydra unless it is there already, and print its path.
#
# `go install github.com/ory/hydra/v2@v2.3.0` refuses the module (its go.mod
# has replace directives), and its module zip lacks ./internal/httpclient,
# the target of one of them: so the module's source is taken from the Go
# module proxy (go mod download), that replace dropped (the published
# github.com/ory/hydra-client-go/v2 of the go.mod's require is used instead),
# and the binary built in the module with Hydra's own tags (sqlite, for
# DSN=memory). The first build takes a few minutes.
set -euo pipefail
export PATH="/usr/local/go/bin:$HOME/go/bin:$PATH"
version=v2.3.0
bin="$HOME/go/bin/hydra"
if [ -x "$bin" ] && "$bin" version 2>/dev/null | grep -q .; then echo "$bin"; exit 0; fi
dir=$(GOFLAGS= go mod download -json "github.com/ory/hydra/v2@$version" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
cp -r "$dir/." "$src"
chmod -R u+w "$src"
sed -i '/hydra-client-go\/v2 => .\/internal\/httpclient/d' "$src/go.mod"
mkdir -p "$(dirname "$bin")"
(cd "$src" && GOFLAGS=-mod=mod go build -tags sqlite,sqlite_omit_load_extension -o "$bin" .) >&2
echo "$bin"
