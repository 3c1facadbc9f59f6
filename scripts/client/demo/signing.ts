/**
 * The demo's signing, for one PDF or several under one login, on the client modules: prepare before the
 * login (the digests, the request, the nonce, what the identity provider shows), complete on the
 * callback (the sign request with the ID token, each signed PDF).
 */
import {
  completeSigning,
  completeSigningDocuments,
  prepareSigning,
  prepareSigningDocuments,
  type LoginRequest,
} from '../src/sign-document';
import type { SignMessage, SignRequestResult, SigningClient } from '../src/signing-client';

export interface UploadedPdf {
  readonly name: string;
  readonly data: Buffer;
}

export interface SignedPdf {
  readonly name: string;
  readonly pdf: Buffer;
  /** The AdES level the signed PDF reached. */
  readonly level: string;
}

/** A signing prepared for the browser's login: one request, one login, one certificate. */
export interface DemoSigning {
  readonly names: readonly string[];
  readonly message: SignMessage;
  readonly nonce: string;
  /** What the identity provider is asked to show: tbs_data and the message (composed for several). */
  readonly login: LoginRequest;
  complete(
    client: SigningClient,
    idToken: string,
  ): Promise<{ requestId: string; result: SignRequestResult; pdfs: SignedPdf[] }>;
}

/**
 * One PDF: a single-document request (tbs_data its digest, the name beside the fingerprint); several:
 * one `documents` request (tbs_data the manifest hash, the message composed with their numbered list).
 */
export async function prepareDemoSigning(
  pdfs: readonly UploadedPdf[],
  message: SignMessage,
): Promise<DemoSigning> {
  const names = pdfs.map((p) => p.name);
  if (pdfs.length === 1) {
    const prepared = await prepareSigning({
      document: pdfs[0].data,
      pdf: true,
      signMessage: message,
      documentName: names[0],
    });
    return {
      names,
      message,
      nonce: prepared.nonce,
      login: prepared.login,
      complete: async (client, idToken) => {
        const signed = await completeSigning(client, prepared, idToken);
        return {
          requestId: signed.requestId,
          result: signed.result,
          pdfs: [{ name: names[0], pdf: signed.output, level: signed.level }],
        };
      },
    };
  }
  const prepared = await prepareSigningDocuments({
    documents: pdfs.map((p) => ({ document: p.data, name: p.name, pdf: true })),
    signMessage: message,
  });
  return {
    names,
    message,
    nonce: prepared.nonce,
    login: prepared.login,
    complete: async (client, idToken) => {
      const signed = await completeSigningDocuments(client, prepared, idToken);
      return {
        requestId: signed.requestId,
        result: signed.result,
        pdfs: signed.outputs.map((o, i) => ({ name: names[i], pdf: o.output, level: o.level })),
      };
    },
  };
}
