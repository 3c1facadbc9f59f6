"""
Schemathesis hooks for scripts/local/runner/tests/schemathesis.e2e.test.ts (loaded with SCHEMATHESIS_HOOKS).

One check of this API's own: a request schemathesis generated as valid (positive mode) that the API
refuses is refused only for what a schema cannot promise, never for its shape. Generated identity
assertions are tokens no trusted identity provider signed, so `POST /v1/sign-requests` may refuse a
schema-valid body only with an `ASSERTION_*` code; the request id of a generated `GET` or revocation
names no request, so those may answer 404 `NOT_FOUND`. Anything else (`SIGN_MESSAGE_INVALID`,
`INVALID_REQUEST`, ...) means the document promises what the API refuses. It stands in for schemathesis'
positive_data_acceptance check, which expects 2xx for every schema-valid request.
"""

import schemathesis

ALLOWED_REFUSALS = {
    ("POST", "/v1/sign-requests"): lambda status, code: status in (400, 401, 403) and code.startswith("ASSERTION_"),
    ("GET", "/v1/sign-requests/{id}"): lambda status, code: status == 404 and code == "NOT_FOUND",
    ("POST", "/v1/sign-requests/{id}/revocation"): lambda status, code: status == 404 and code == "NOT_FOUND",
}


@schemathesis.check
def schema_valid_refused_only_for_credentials(ctx, response, case):
    """A schema-valid request is accepted, or refused only for its (generated) credentials or unknown id."""
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code < 400:
        return None
    try:
        code = str(response.json()["error"]["code"])
    except Exception:  # noqa: BLE001 - a refusal without the error body is itself the failure
        code = ""
    allowed = ALLOWED_REFUSALS.get((case.method.upper(), case.path))
    if allowed is None or not allowed(response.status_code, code):
        raise AssertionError(
            f"A schema-valid request was refused: {response.status_code} {code or '(no error code)'}"
        )
    return None


@schemathesis.hook
def before_call(context, case, kwargs):
    """The local run authenticates by API key: no made-up SigV4 `Authorization` (the document's `sigv4`
    scheme, which schemathesis fills with a generated value), which the gateway would refuse as a forged
    signature before the API sees the request."""
    for headers in (case.headers, kwargs.get("headers")):
        if headers:
            for name in [n for n in headers if n.lower() == "authorization"]:
                del headers[name]
