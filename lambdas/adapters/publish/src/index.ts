import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { PKI_OBJECTS, type PkiPublisher } from '../../../core/src';

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
  };
}
