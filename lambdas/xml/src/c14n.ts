/**
 * Canonical XML (XMLDSig core 6.5): inclusive C14N 1.0 and exclusive C14N, each with or without comments,
 * through xml-crypto's canonicalizers. A node is canonicalized in its document's context, so inherited
 * namespace declarations (inclusive) and visibly used ones (exclusive) are rendered as a verifier would.
 */
import {
  C14nCanonicalization,
  C14nCanonicalizationWithComments,
  ExclusiveCanonicalization,
  ExclusiveCanonicalizationWithComments,
  findAncestorNs,
} from 'xml-crypto';
import { XmlAlgorithmNotSupportedError } from './errors';
import { C14N } from './namespaces';

export type C14nAlgorithm = (typeof C14N)[keyof typeof C14N];

const CANONICALIZERS: Readonly<
  Record<C14nAlgorithm, new () => { process(node: Node, options: object): string }>
> = {
  [C14N.inclusive]: C14nCanonicalization,
  [C14N.inclusiveWithComments]: C14nCanonicalizationWithComments,
  [C14N.exclusive]: ExclusiveCanonicalization,
  [C14N.exclusiveWithComments]: ExclusiveCanonicalizationWithComments,
};

/** The supported algorithm a URI names; throws XmlAlgorithmNotSupportedError for any other (C14N 1.1 too). */
export function c14nAlgorithm(uri: string): C14nAlgorithm {
  if (Object.hasOwn(CANONICALIZERS, uri)) return uri as C14nAlgorithm;
  throw new XmlAlgorithmNotSupportedError('the canonicalization method is not supported');
}

export interface C14nOptions {
  /** Exclusive C14N's InclusiveNamespaces PrefixList. */
  readonly inclusiveNamespaces?: readonly string[];
}

/** The canonical form of an element, as UTF-8 text. */
export function canonicalize(element: Element, algorithm: C14nAlgorithm, options: C14nOptions = {}): string {
  const Canonicalizer = CANONICALIZERS[algorithm];
  // Inclusive C14N renders the namespaces an element inherits; xml-crypto needs them handed in.
  const ancestorNamespaces = findAncestorNs(element.ownerDocument as never, xpathOf(element));
  return new Canonicalizer().process(element, {
    inclusiveNamespacesPrefixList: [...(options.inclusiveNamespaces ?? [])],
    ancestorNamespaces,
  });
}

/** An absolute XPath to an element by position (findAncestorNs walks from it). */
function xpathOf(element: Element): string {
  const steps: string[] = [];
  for (let node: Node | null = element; node !== null && node.nodeType === 1; node = node.parentNode) {
    let position = 1;
    for (let sibling = node.previousSibling; sibling !== null; sibling = sibling.previousSibling) {
      if (sibling.nodeType === 1) position += 1;
    }
    steps.unshift(`*[${position}]`);
  }
  return `/${steps.join('/')}`;
}
