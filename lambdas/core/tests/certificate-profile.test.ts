/**
 * The natural-person profile: every value validated, hostile values refused, and the error never carries
 * the value itself (personal data).
 */
import {
  InvalidIdentityError,
  SUBJECT_OIDS,
  isIsoCountryCode,
  subjectAttributes,
  validateSignerIdentity,
  type SignerIdentity,
  type SubjectField,
} from '../src/identity';
import { normalizeSerial } from '../src/pki';

const VALID: SignerIdentity = {
  commonName: 'Åsa Öberg-Nilsson',
  givenName: 'Åsa',
  surname: 'Öberg-Nilsson',
  serialNumber: '197001011234',
  country: 'SE',
};

function refusal(identity: unknown): InvalidIdentityError {
  try {
    validateSignerIdentity(identity);
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidIdentityError);
    return err as InvalidIdentityError;
  }
  throw new Error('expected the identity to be refused');
}

describe('validateSignerIdentity', () => {
  it('accepts realistic names from several scripts and forms', () => {
    for (const names of [
      ['Seán', "O'Brien-Ó Súilleabháin"],
      ['J. R. R.', 'Tolkien'],
      ['Zoë', 'van der Berg'],
      ['Ιωάννης', 'Παπαδόπουλος'],
      ['Сергей', 'Иванов'],
      ['Анна-Мария', 'D\u2019Arcy'],
    ]) {
      const identity = { ...VALID, givenName: names[0], surname: names[1], commonName: names.join(' ') };
      expect(validateSignerIdentity(identity)).toEqual(identity);
    }
    expect(validateSignerIdentity({ ...VALID, serialNumber: 'PNOSE-197001011234' }).serialNumber).toBe(
      'PNOSE-197001011234',
    );
  });

  it('normalises names to NFC (a decomposed Å becomes one code point)', () => {
    const decomposed = 'A\u030Asa';
    const out = validateSignerIdentity({ ...VALID, givenName: decomposed });
    expect(out.givenName).toBe('Åsa');
    expect(out.givenName).toHaveLength(3);
  });

  it.each<[string, Partial<Record<SubjectField, unknown>>, SubjectField, string]>([
    ['a missing surname', { surname: undefined }, 'surname', 'missing'],
    ['an empty given name', { givenName: '' }, 'givenName', 'missing'],
    ['a number instead of a string', { serialNumber: 197001011234 }, 'serialNumber', 'missing'],
    ['an overlong common name (65 letters)', { commonName: 'A'.repeat(65) }, 'commonName', 'too-long'],
    ['a megabyte surname', { surname: 'a'.repeat(1_000_000) }, 'surname', 'too-long'],
    ['an overlong serial number', { serialNumber: '1'.repeat(65) }, 'serialNumber', 'too-long'],
    ['a NUL byte', { givenName: 'Åsa\u0000' }, 'givenName', 'forbidden-characters'],
    ['a newline (log/DN splitting)', { commonName: 'Åsa\nCN=Root' }, 'commonName', 'forbidden-characters'],
    ['DEL', { surname: 'Ob\u007Ferg' }, 'surname', 'forbidden-characters'],
    ['a C1 control character', { surname: 'Ob\u0085erg' }, 'surname', 'forbidden-characters'],
    ['a right-to-left override', { commonName: 'Åsa \u202Egrebö' }, 'commonName', 'forbidden-characters'],
    ['a zero-width joiner', { givenName: 'Å\u200Dsa' }, 'givenName', 'forbidden-characters'],
    ['"," DN injection', { commonName: 'Eve, CN=Root CA' }, 'commonName', 'forbidden-characters'],
    ['"=" DN injection', { surname: 'O=Evil' }, 'surname', 'forbidden-characters'],
    [
      '"+" multi-valued RDN injection',
      { givenName: 'Eve+serialNumber=1' },
      'givenName',
      'forbidden-characters',
    ],
    ['"+" in the serial number', { serialNumber: '19700101+1234' }, 'serialNumber', 'forbidden-characters'],
    ['"=" in the serial number', { serialNumber: 'SN=1' }, 'serialNumber', 'forbidden-characters'],
    [
      'a space in the serial number',
      { serialNumber: '19700101 1234' },
      'serialNumber',
      'forbidden-characters',
    ],
    [
      'non-ASCII in the serial number',
      { serialNumber: '１９７００１０１' },
      'serialNumber',
      'forbidden-characters',
    ],
    ['digits in a name', { givenName: 'Åsa2' }, 'givenName', 'forbidden-characters'],
    ['a leading space', { surname: ' Öberg' }, 'surname', 'forbidden-characters'],
    ['a lone high surrogate', { surname: 'Ob\uD800erg' }, 'surname', 'not-well-formed'],
    ['a lone low surrogate', { commonName: '\uDC00' }, 'commonName', 'not-well-formed'],
    ['a lower-case country', { country: 'se' }, 'country', 'unknown-country'],
    ['an unassigned country code', { country: 'XX' }, 'country', 'unknown-country'],
    ['a retired country code', { country: 'YU' }, 'country', 'unknown-country'],
    ['a three-letter country', { country: 'SWE' }, 'country', 'too-long'],
  ])('refuses %s', (_what, change, field, problem) => {
    const error = refusal({ ...VALID, ...change });
    expect(error.field).toBe(field);
    expect(error.problem).toBe(problem);
    expect(error.code).toBe('INVALID_IDENTITY');
  });

  it('refuses bytes that were not UTF-8 (decoded to U+FFFD)', () => {
    const surname = Buffer.from([0x4f, 0x62, 0xff, 0xfe, 0x65, 0x72, 0x67]).toString('utf8');
    expect(surname).toContain('\uFFFD');
    expect(refusal({ ...VALID, surname }).problem).toBe('forbidden-characters');
  });

  it('refuses a non-object identity', () => {
    expect(refusal(undefined).problem).toBe('missing');
    expect(refusal('CN=Root').problem).toBe('missing');
  });

  it('never puts the value into the error message', () => {
    const secretish = 'Eve, CN=Root 197001011234';
    const error = refusal({ ...VALID, commonName: secretish });
    expect(error.message).not.toContain('Eve');
    expect(error.message).not.toContain('1970');
    expect(JSON.stringify(error)).not.toContain('Eve');
  });
});

describe('subjectAttributes', () => {
  it('orders C, SN, GN, serialNumber, CN with RFC 5280 string types', () => {
    expect(subjectAttributes(VALID)).toEqual([
      { field: 'country', oid: '2.5.4.6', kind: 'printableString', value: 'SE' },
      { field: 'surname', oid: '2.5.4.4', kind: 'utf8String', value: 'Öberg-Nilsson' },
      { field: 'givenName', oid: '2.5.4.42', kind: 'utf8String', value: 'Åsa' },
      { field: 'serialNumber', oid: '2.5.4.5', kind: 'printableString', value: '197001011234' },
      { field: 'commonName', oid: '2.5.4.3', kind: 'utf8String', value: 'Åsa Öberg-Nilsson' },
    ]);
    expect(SUBJECT_OIDS.commonName).toBe('2.5.4.3');
  });

  it('validates before it returns anything', () => {
    expect(() => subjectAttributes({ ...VALID, country: 'ZZ' })).toThrow(InvalidIdentityError);
  });
});

describe('isIsoCountryCode', () => {
  it('knows assigned codes only', () => {
    expect(['SE', 'NO', 'FI', 'DK', 'DE', 'GB', 'US', 'AX'].every(isIsoCountryCode)).toBe(true);
    expect(['EU', 'UK', 'XK', 'SU', 'ZZ', ''].some(isIsoCountryCode)).toBe(false);
  });
});

describe('normalizeSerial', () => {
  it.each([
    ['0A:1B:2C', '0a1b2c'],
    ['0x0a1b2c', '0a1b2c'],
    ['A1B2C', '0a1b2c'],
    ['000a1b2c', '0a1b2c'],
    ['00ff', 'ff'],
    ['80', '80'],
    ['0', '00'],
  ])('%s -> %s (the bytes of the positive integer, as the CA stores them)', (input, expected) => {
    expect(normalizeSerial(input)).toBe(expected);
  });

  it.each(['', 'xyz', '12 34', '1'.repeat(43)])('refuses %p', (input) => {
    expect(normalizeSerial(input)).toBeUndefined();
  });
});
