/**
 * Audit checkpoints written outside the audit table, write-once.
 *
 *   object / file   checkpoints/<sequence, 12 digits>.json
 *   content         {"sequence":n,"body":"<canonical body>","signature":"<base64 DER>","hash":"<hex>"}
 *
 * On AWS the bucket has Object Lock in compliance mode (set by the CDK app): no one, root included, can
 * delete or overwrite an anchor before its retention ends, and the writer asks S3 not to replace an
 * existing key (If-None-Match: *). Locally a directory, files created exclusively (O_EXCL).
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import type { AwsConfig, ObjectTarget } from '@pipeline/config';
import type { AnchoredCheckpoint, AuditAnchorStore, StoredCheckpoint } from '@pipeline/core/audit';
import { s3Client } from '@pipeline/adapters/aws';

const PREFIX = 'checkpoints/';
const NAME = /^(\d{12})\.json$/;

const fileName = (sequence: number): string => `${String(sequence).padStart(12, '0')}.json`;

function serialise(cp: AnchoredCheckpoint): string {
  return JSON.stringify({
    sequence: cp.sequence,
    body: cp.body,
    signature: cp.signature.toString('base64'),
    hash: cp.hash,
  });
}

/** Whatever is stored comes back, for the verifier to judge (a malformed anchor has no body). */
function parse(name: string, text: string): StoredCheckpoint {
  const position = NAME.test(name) ? Number(NAME.exec(name)![1]) : undefined;
  try {
    const json = JSON.parse(text) as Record<string, unknown>;
    return {
      position,
      rawPosition: name,
      body: typeof json.body === 'string' ? json.body : undefined,
      signature: typeof json.signature === 'string' ? Buffer.from(json.signature, 'base64') : undefined,
    };
  } catch {
    return { position, rawPosition: name };
  }
}

/** The anchor store of AUDIT_ANCHOR_TARGET: a directory or the Object Lock bucket. */
export function auditAnchorStore(target: ObjectTarget, aws: AwsConfig): AuditAnchorStore {
  return target.kind === 'file' ? fileAnchorStore(target.dir) : s3AnchorStore(s3Client(aws), target.bucket);
}

export function fileAnchorStore(dir: string): AuditAnchorStore {
  const root = join(dir, PREFIX);
  return {
    location: root,
    async put(cp) {
      await mkdir(root, { recursive: true });
      const file = join(root, fileName(cp.sequence));
      try {
        await writeFile(file, serialise(cp), { flag: 'wx', mode: 0o444 });
        return true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        return (await readFile(file, 'utf8')) === serialise(cp);
      }
    },
    async has(sequence) {
      try {
        await readFile(join(root, fileName(sequence)));
        return true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
        throw err;
      }
    },
    async readAll() {
      let names: string[];
      try {
        names = (await readdir(root)).sort();
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
        throw err;
      }
      return Promise.all(names.map(async (name) => parse(name, await readFile(join(root, name), 'utf8'))));
    },
  };
}

export function s3AnchorStore(client: S3Client, bucket: string): AuditAnchorStore {
  const key = (sequence: number): string => `${PREFIX}${fileName(sequence)}`;
  const read = async (name: string): Promise<string> => {
    const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: name }));
    return out.Body ? await out.Body.transformToString('utf8') : '';
  };
  return {
    location: `s3://${bucket}/${PREFIX}`,
    async put(cp) {
      try {
        await client.send(
          new PutObjectCommand({
            Bucket: bucket,
            Key: key(cp.sequence),
            Body: serialise(cp),
            ContentType: 'application/json',
            IfNoneMatch: '*',
            // Object Lock needs an integrity checksum on every write.
            ChecksumAlgorithm: 'SHA256',
          }),
        );
        return true;
      } catch (err) {
        const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
        if (status !== 412 && (err as { name?: string }).name !== 'PreconditionFailed') throw err;
        return (await read(key(cp.sequence))) === serialise(cp);
      }
    },
    async has(sequence) {
      try {
        await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key(sequence) }));
        return true;
      } catch (err) {
        const name = (err as { name?: string }).name;
        if (name === 'NotFound' || name === 'NoSuchKey') return false;
        throw err;
      }
    },
    async readAll() {
      const names: string[] = [];
      let ContinuationToken: string | undefined;
      do {
        const page = await client.send(
          new ListObjectsV2Command({ Bucket: bucket, Prefix: PREFIX, ContinuationToken }),
        );
        for (const o of page.Contents ?? []) if (o.Key) names.push(o.Key);
        ContinuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (ContinuationToken);
      const out: StoredCheckpoint[] = [];
      for (const name of names.sort()) out.push(parse(name.slice(PREFIX.length), await read(name)));
      return out;
    },
  };
}
