#!/usr/bin/env python3
"""
A Cloud Signature Consortium API v2.0.0.2 client written from the specification alone, sharing no code
with the service: the OAuth 2.0 authorization code flow with PKCE (S256) and client_secret_basic
(oauth2/pushed_authorize, oauth2/authorize, oauth2/token), then signatures/signDoc for a PDF (PAdES, the digest of its byte
ranges, the CMS embedded and the validationInfo written into the PDF's DSS with pyHanko) or
signatures/signHash for a file's SHA-256. Standard library HTTP (urllib); pyHanko (PyPI) for the PDF.

The citizen's login happens in a user agent (a browser), not in this client, as for a native app
(RFC 8252): the redirect URI is a loopback one (http://127.0.0.1:<port>/<path>) on which the client
listens; it prints
  {"login": "<URL of the authorization request's redirect>"}
for the user agent to open, and the user agent, after the login and approval at the identity provider
and the service's callback, brings the code and the state to the client's redirect URI.

  csc_client.py pades --base URL --client-id ID --redirect-uri URI --pdf IN --out OUT
  csc_client.py signhash --base URL --client-id ID --redirect-uri URI --file IN
  csc_client.py cscsigner --base URL --client-id ID --redirect-uri URI --pdf IN --out OUT --tsa URL --root PEM
                          [--crl URL ...]
    (pyHanko's CSCSigner: a service login creates the one-time credential, a second login approves the
    hashes pyHanko computed with its certificate)
The client secret is read from CSC_CLIENT_SECRET. The last line on stdout is a JSON summary.
"""
import argparse
import asyncio
import base64
import hashlib
import http.server
import io
import json
import os
import secrets
import time
import urllib.error
import urllib.parse
import urllib.request

SHA256_OID = "2.16.840.1.101.3.4.2.1"
ECDSA_SHA256_OID = "1.2.840.10045.4.3.2"
CREDENTIAL_ID = "onetime-ec-p256"


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


OPENER = urllib.request.build_opener(NoRedirect)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def say(obj) -> None:
    print(json.dumps(obj), flush=True)


def location_of(url: str) -> str:
    """GET without following: the Location of the 302."""
    try:
        OPENER.open(url)
    except urllib.error.HTTPError as err:
        if err.code in (301, 302, 303, 307):
            return err.headers["Location"]
        raise SystemExit(f"{url}: HTTP {err.code} {err.read()[:300]!r}")
    raise SystemExit(f"{url}: expected a redirect")


def post_json(url: str, body: dict, token: str | None = None) -> dict:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req) as res:
            return json.load(res)
    except urllib.error.HTTPError as err:
        raise SystemExit(f"{url}: HTTP {err.code} {err.read()[:500]!r}")


def basic_auth(args) -> str:
    """client_secret_basic (RFC 6749 2.3.1): the form-encoded id and secret."""
    secret = os.environ["CSC_CLIENT_SECRET"]
    pair = f"{urllib.parse.quote(args.client_id, safe='')}:{urllib.parse.quote(secret, safe='')}"
    return f"Basic {base64.b64encode(pair.encode()).decode()}"


def post_form(url: str, form: dict, authorization: str) -> dict:
    req = urllib.request.Request(
        url,
        data=urllib.parse.urlencode(form).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded", "Authorization": authorization},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req) as res:
            return json.load(res)
    except urllib.error.HTTPError as err:
        raise SystemExit(f"{url}: HTTP {err.code} {err.read()[:500]!r}")


def receive_redirect(redirect_uri: str, ready) -> dict:
    """
    Listens on the loopback redirect URI, calls `ready` (the user agent may go), and returns the query of
    the first request the user agent makes to that URI's path (the code and state, or an error).
    """
    uri = urllib.parse.urlsplit(redirect_uri)
    if uri.scheme != "http" or uri.hostname != "127.0.0.1" or not uri.port:
        raise SystemExit(f"{redirect_uri}: not a loopback redirect URI with a port")
    received: dict = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the standard library's name)
            url = urllib.parse.urlsplit(self.path)
            if url.path != uri.path:
                self.send_error(404)
                return
            body = b"<!doctype html><title>Signed in</title><p>You may close this window.</p>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            # Only once the user agent has its page: the client then stops listening.
            received.update(urllib.parse.parse_qsl(url.query))

        def log_message(self, *args):  # quiet: the query holds the code
            pass

    # Threads: a browser may open connections it sends nothing on (preconnects) before the real one.
    with http.server.ThreadingHTTPServer(("127.0.0.1", uri.port), Handler) as server:
        server.daemon_threads = True
        server.timeout = 0.5
        ready()
        deadline = time.monotonic() + 120
        while not received:
            if time.monotonic() > deadline:
                raise SystemExit("no redirect to the redirect URI within 120 s")
            server.handle_request()
    return received


def authorize(args, params: dict, pushed: bool = False, scope: str = "credential") -> str:
    """
    oauth2/authorize with PKCE (the parameters pushed first to oauth2/pushed_authorize, RFC 9126, when
    `pushed`) -> the user agent's login -> the code at our redirect URI -> oauth2/token.
    """
    verifier = b64url(secrets.token_bytes(32))
    state = secrets.token_hex(8)
    query = {
        "response_type": "code",
        "client_id": args.client_id,
        "redirect_uri": args.redirect_uri,
        "code_challenge": b64url(hashlib.sha256(verifier.encode()).digest()),
        "code_challenge_method": "S256",
        "state": state,
        **params,
    }
    if pushed:
        par = post_form(f"{args.base}/oauth2/pushed_authorize", query, basic_auth(args))
        query = {"client_id": args.client_id, "request_uri": par["request_uri"]}
    to_idp = location_of(f"{args.base}/oauth2/authorize?{urllib.parse.urlencode(query)}")
    answer = receive_redirect(args.redirect_uri, lambda: say({"login": to_idp}))
    if answer.get("state") != state:
        raise SystemExit("the authorization came back with another state")
    if "code" not in answer:
        raise SystemExit(f"authorization refused: {answer}")
    token = post_form(
        f"{args.base}/oauth2/token",
        {
            "grant_type": "authorization_code",
            "code": answer["code"],
            "code_verifier": verifier,
            "redirect_uri": args.redirect_uri,
        },
        basic_auth(args),
    )
    if token.get("token_type") != "Bearer" or token.get("scope") != scope:
        raise SystemExit(f"unexpected token answer: {token}")
    return token["access_token"]


def pades(args) -> dict:
    from asn1crypto import crl as asn1_crl, ocsp as asn1_ocsp, x509 as asn1_x509
    from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter
    from pyhanko.sign import fields, signers
    from pyhanko.sign.signers.pdf_signer import PdfSignatureMetadata, PdfSigner, PdfTBSDocument
    from pyhanko.sign.validation.dss import DocumentSecurityStore

    info = post_json(f"{args.base}/info", {})
    if "signatures/signDoc" not in info["methods"]:
        raise SystemExit("the service does not offer signatures/signDoc")

    # The PDF's signature field and byte ranges; the service's CMS (PAdES-B-B, no signingTime) goes
    # into /Contents. 24 KiB reserved (hex: twice the DER) for the CMS with its time-stamp.
    with open(args.pdf, "rb") as f:
        writer = IncrementalPdfFileWriter(io.BytesIO(f.read()))
    meta = PdfSignatureMetadata(
        field_name="Signature1", md_algorithm="sha256", subfilter=fields.SigSeedSubFilter.PADES
    )
    pdf_signer = PdfSigner(meta, signer=signers.ExternalSigner(None, None, signature_value=bytes(256)))
    prepared, _tbs, output = asyncio.run(
        pdf_signer.async_digest_doc_for_signing(writer, bytes_reserved=24 * 1024)
    )
    digest = prepared.document_digest

    details = [
        {
            "type": "credential",
            "credentialID": CREDENTIAL_ID,
            "hashAlgorithmOID": SHA256_OID,
            "documentDigests": [{"hash": b64url(digest), "label": os.path.basename(args.pdf)}],
            "signature_format": "P",
            "conformance_level": "AdES-B-LT",
        }
    ]
    # Pushed (RFC 9126): the authorization details stay off the user agent's URL.
    token = authorize(args, {"authorization_details": json.dumps(details)}, pushed=True)
    signed = post_json(
        f"{args.base}/signatures/signDoc",
        {
            "credentialID": CREDENTIAL_ID,
            "documentDigests": [
                {
                    "hashes": [base64.b64encode(digest).decode()],
                    "hashAlgorithmOID": SHA256_OID,
                    "signature_format": "P",
                    "conformance_level": "AdES-B-LT",
                    "signAlgo": ECDSA_SHA256_OID,
                }
            ],
            "operationMode": "S",
            "returnValidationInfo": True,
        },
        token,
    )
    cms = base64.b64decode(signed["SignatureObject"][0])
    PdfTBSDocument.finish_signing(output, prepared, cms)

    # B-LT: the validation data into the Document Security Store (an incremental update).
    vi = signed["validationInfo"]
    der = lambda values: [base64.b64decode(v) for v in values]  # noqa: E731
    DocumentSecurityStore.add_dss(
        output,
        None,
        certs=[asn1_x509.Certificate.load(d) for d in der(vi["certificates"])],
        ocsps=[asn1_ocsp.OCSPResponse.load(d) for d in der(vi["ocsp"])],
        crls=[asn1_crl.CertificateList.load(d) for d in der(vi["crl"])],
    )
    with open(args.out, "wb") as f:
        f.write(output.getvalue())
    return {
        "signed": args.out,
        "digest": base64.b64encode(digest).decode(),
        "validationInfo": {k: len(v) for k, v in vi.items()},
    }


def signhash(args) -> dict:
    with open(args.file, "rb") as f:
        digest = hashlib.sha256(f.read()).digest()
    token = authorize(
        args,
        {
            "scope": "credential",
            "credentialID": CREDENTIAL_ID,
            "numSignatures": "1",
            "hashes": b64url(digest),
            "hashAlgorithmOID": SHA256_OID,
            "description": "A file signed by the Python CSC client",
        },
    )
    signed = post_json(
        f"{args.base}/signatures/signHash",
        {
            "credentialID": CREDENTIAL_ID,
            "hashes": [base64.b64encode(digest).decode()],
            "hashAlgorithmOID": SHA256_OID,
            "signAlgo": ECDSA_SHA256_OID,
            "operationMode": "S",
        },
        token,
    )
    return {"signature": signed["signatures"][0], "digest": base64.b64encode(digest).decode()}


def cscsigner(args) -> dict:
    """
    pyHanko's own CSC signer (pyhanko.sign.signers.csc_signer, unmodified), as its API intends: the
    service authorization (the citizen's first login, which creates the one-time credential), the
    credential's certificates with pyHanko's fetch_certs_in_csc_credential, then sign_pdf with CSCSigner,
    whose authorization manager (ours, as the module leaves it to the caller) asks the citizen's second
    login to approve exactly the hashes pyHanko computed and hands the credential token over as the SAD.
    PAdES with the service's TSA and the validation data pyHanko fetches itself (B-LT).
    """
    import aiohttp
    from asn1crypto import pem, x509 as asn1_x509
    from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter
    from pyhanko.sign import fields, signers, timestamps
    from pyhanko.sign.signers import csc_signer
    from pyhanko_certvalidator import ValidationContext

    service_token = authorize(args, {"scope": "service"}, scope="service")
    listed = post_json(f"{args.base}/credentials/list", {}, service_token)
    credential_id = listed["credentialIDs"][0]
    service_url = args.base.removesuffix("/csc/v2")

    class ApprovingManager(csc_signer.CSCAuthorizationManager):
        """Each batch of hashes: the citizen's approval (a credential authorization), its token the SAD."""

        token = service_token

        async def authorize_signature(self, hash_b64s):
            params = {
                "scope": "credential",
                "credentialID": credential_id,
                "numSignatures": str(len(hash_b64s)),
                "hashes": ",".join(b64url(base64.b64decode(h)) for h in hash_b64s),
                "hashAlgorithmOID": SHA256_OID,
                "description": "A PDF signed with pyHanko",
            }
            loop = asyncio.get_running_loop()
            ApprovingManager.token = await loop.run_in_executor(None, lambda: authorize(args, params))
            return csc_signer.CSCAuthorizationInfo(sad=ApprovingManager.token)

        @property
        def auth_headers(self):
            return {"Authorization": f"Bearer {ApprovingManager.token}"}

    with open(args.root, "rb") as f:
        _, _, root_der = pem.unarmor(f.read())
    root = asn1_x509.Certificate.load(root_der)
    crls = []
    for url in args.crl or []:
        with urllib.request.urlopen(url) as res:
            crls.append(res.read())

    async def sign() -> bytes:
        async with aiohttp.ClientSession() as session:
            session_info = csc_signer.CSCServiceSessionInfo(
                service_url=service_url, credential_id=credential_id, oauth_token=service_token, api_ver="v2"
            )
            info = await csc_signer.fetch_certs_in_csc_credential(session, session_info)
            signer = csc_signer.CSCSigner(session, ApprovingManager(session_info, info))
            with open(args.pdf, "rb") as f:
                writer = IncrementalPdfFileWriter(io.BytesIO(f.read()))
            meta = signers.PdfSignatureMetadata(
                field_name="Signature1",
                md_algorithm="sha256",
                subfilter=fields.SigSeedSubFilter.PADES,
                embed_validation_info=True,
                # Revocation data fetched from the certificates' URLs, and the CRLs given (a CA whose
                # published URL is not where this run serves it); none found is an error, not a B-T.
                validation_context=ValidationContext(
                    trust_roots=[root], crls=crls, allow_fetching=True, revocation_mode="hard-fail"
                ),
            )
            out = await signers.async_sign_pdf(
                writer, meta, signer=signer, timestamper=timestamps.HTTPTimeStamper(args.tsa)
            )
            return out.getvalue()

    signed = asyncio.run(sign())
    with open(args.out, "wb") as f:
        f.write(signed)
    return {"signed": args.out, "credentialID": credential_id}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["pades", "signhash", "cscsigner"])
    parser.add_argument("--base", required=True)
    parser.add_argument("--client-id", required=True)
    parser.add_argument("--redirect-uri", required=True)
    parser.add_argument("--pdf")
    parser.add_argument("--out")
    parser.add_argument("--file")
    parser.add_argument("--tsa")
    parser.add_argument("--root")
    parser.add_argument("--crl", action="append")
    args = parser.parse_args()
    say({"result": {"pades": pades, "signhash": signhash, "cscsigner": cscsigner}[args.mode](args)})


if __name__ == "__main__":
    main()
