/** The local SAML IdP as a process: `listening <port>`, its key made 0600, the SP metadata file, SIGTERM. */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ROOT } from '../../paths';
import { certBase64, throwawayKeyPair } from '../keys';

const SP_METADATA = `<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="http://127.0.0.1/sp">
<md:SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
<md:KeyDescriptor use="signing"><ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:X509Data><ds:X509Certificate>CERT</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>
<md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="http://127.0.0.1:9/acs" index="0"/>
</md:SPSSODescriptor></md:EntityDescriptor>`;

it('starts, serves its metadata, keeps its key 0600 and stops on SIGTERM', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'saml-idp-main-'));
  try {
    // Any certificate serves as the SP's signing certificate here: no request is sent.
    writeFileSync(
      join(dir, 'sp.xml'),
      SP_METADATA.replace('CERT', certBase64(throwawayKeyPair('SP').certPem)),
    );
    const child = spawn(process.execPath, ['--import', 'tsx', join(__dirname, '..', 'main.ts')], {
      cwd: ROOT,
      env: { ...process.env, SAML_IDP_DIR: join(dir, 'idp'), SAML_IDP_SP_METADATA: join(dir, 'sp.xml') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
    const firstLine = await new Promise<string>((done) =>
      createInterface({ input: child.stdout }).once('line', done),
    );
    expect(firstLine).toMatch(/^listening \d+$/);
    const port = Number(firstLine.split(' ')[1]);
    const metadata = await (await fetch(`http://127.0.0.1:${port}/saml/idp/metadata`)).text();
    expect(metadata).toContain(`entityID="http://127.0.0.1:${port}/saml/idp"`);
    expect(statSync(join(dir, 'idp', 'key.pem')).mode & 0o777).toBe(0o600);
    // The test knobs are not served by the process.
    expect(
      (await fetch(`http://127.0.0.1:${port}/saml/idp/test/next`, { method: 'POST', body: '{}' })).status,
    ).toBe(404);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
