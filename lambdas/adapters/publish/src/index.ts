import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GetObjectCommand, NoSuchKey, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { AwsConfig, ObjectTarget } from '@pipeline/config';
import { PKI_OBJECTS, type PkiPublisher } from '@pipeline/core/pki';
import { s3Client } from '@pipeline/adapters/aws';

/** The publisher of PKI_PUBLISH_TARGET: a directory or the PKI bucket. */
export function pkiPublisher(target: ObjectTarget, aws: AwsConfig): PkiPublisher {
  return target.kind === 'file' ? filePkiPublisher(target.dir) : s3PkiPublisher(s3Client(aws), target.bucket);
}

/** Locally: files in a directory the runner serves at PKI_BASE_URL (written then renamed: never half a CRL). */
export function filePkiPublisher(dir: string): PkiPublisher {
  return {
    location: dir,
    async publish(name, der) {
      await mkdir(dir, { recursive: true });
      const file = join(dir, name);
      await writeFile(`${file}.tmp`, der, { mode: 0o644 });
      await rename(`${file}.tmp`, file);
    },
    async read(name) {
      try {
        return await readFile(join(dir, name));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw err;
      }
    },
  };
}

/**
 * In AWS: objects in the PKI bucket, which CloudFront serves over plain HTTP. Cache-Control lets the CDN
 * and relying parties keep a CRL until shortly before the next one is due.
 */
export function s3PkiPublisher(client: S3Client, bucket: string): PkiPublisher {
  return {
    location: `s3://${bucket}`,
    async publish(name, der, { maxAgeSeconds }) {
      await client.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: name,
          Body: der,
          ContentType: PKI_OBJECTS[name],
          CacheControl: `public, max-age=${maxAgeSeconds}`,
        }),
      );
    },
    async read(name) {
      try {
        const out = await client.send(new GetObjectCommand({ Bucket: bucket, Key: name }));
        return out.Body ? Buffer.from(await out.Body.transformToByteArray()) : undefined;
      } catch (err) {
        if (err instanceof NoSuchKey || (err as { name?: string }).name === 'NoSuchKey') return undefined;
        throw err;
      }
    },
  };
}
