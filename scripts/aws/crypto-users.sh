#!/usr/bin/env bash
# On the admin host, once after the first deploy: creates the crypto users of the stack's secrets in the
# activated cluster with the CloudHSM CLI (single-command mode, the admin's credentials from
# CLOUDHSM_PIN=<admin>:<password>, read without echo), each with the password generated in its secret.
# Passwords never reach the terminal or a file (they are in the CLI's arguments while it runs: use a
# single-operator admin host). Written from AWS's CloudHSM CLI documentation (`user
# create`, CLOUDHSM_ROLE/CLOUDHSM_PIN); not run from here.
#
#   crypto-users.sh <stack name>      (default SigningPipelineStack)
set -euo pipefail
STACK="${1:-SigningPipelineStack}"
CLI="${CLOUDHSM_CLI:-/opt/cloudhsm/bin/cloudhsm-cli}"
die() { printf '[crypto-users] ERROR: %s\n' "$*" >&2; exit 1; }
[ -x "$CLI" ] || die "$CLI not found: install the CloudHSM CLI on the admin host"
if [ -z "${CLOUDHSM_PIN:-}" ]; then
  read -r -p 'admin user name: ' admin
  read -r -s -p 'admin password: ' password; echo
  export CLOUDHSM_PIN="$admin:$password"
fi
export CLOUDHSM_ROLE=admin
# The five crypto user secrets are the stack's secrets tagged with their user (HsmAccess).
for arn in $(aws cloudformation describe-stack-resources --stack-name "$STACK" \
  --query "StackResources[?ResourceType=='AWS::SecretsManager::Secret' && contains(LogicalResourceId, 'CryptoUser')].PhysicalResourceId" \
  --output text); do
  secret="$(aws secretsmanager get-secret-value --secret-id "$arn" --query SecretString --output text)"
  user="$(printf '%s' "$secret" | python3 -c 'import json,sys; print(json.load(sys.stdin)["username"])')"
  pass="$(printf '%s' "$secret" | python3 -c 'import json,sys; print(json.load(sys.stdin)["password"])')"
  if "$CLI" user list 2>/dev/null | grep -q "\"username\": \"$user\""; then
    echo "[crypto-users] $user exists"
  else
    "$CLI" user create --username "$user" --role crypto-user --password "$pass" >/dev/null
    echo "[crypto-users] $user created"
  fi
done
