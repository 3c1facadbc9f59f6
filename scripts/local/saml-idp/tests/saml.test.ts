/** The pure pieces of the local SAML IdP: the signMessageDigest value (04 §3.2.4) and the LoA choice. */
import { LOA } from '../../idp/profile';
import { chooseLoa, signMessageDigest } from '../saml';

describe('signMessageDigest', () => {
  it('is the worked example of 04 §3.2.4', () => {
    // The spec's csig:Message, with the white space around it that the element holds.
    const message =
      '\n  SSBoZXJlYnkgY29uZmlybSB0aGF0IEkgd2FudCB0byBqb2luIGV4YW1wbGUuY29tIGFzIGEgY3VzdG9tZXI=\n';
    expect(signMessageDigest(message)).toBe(
      'http://www.w3.org/2001/04/xmlenc#sha256;0yKaSVsYeh+PX2Q6diqO2w89+a3Dm303tp3AVjgxwj0=',
    );
  });
});

describe('chooseLoa', () => {
  it('takes the first requested level the IdP is certified for', () => {
    expect(chooseLoa([LOA.loa4, LOA.loa2, LOA.loa3])).toBe(LOA.loa2);
  });
  it('answers loa3 when none is requested and nothing when none is supported', () => {
    expect(chooseLoa([])).toBe(LOA.loa3);
    expect(chooseLoa([LOA.loa4])).toBeUndefined();
  });
});
