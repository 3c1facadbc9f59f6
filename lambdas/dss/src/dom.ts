/** Small readers over the DOM of a verified message: by namespace and local name, never by prefix. */
import { childrenNS } from '@pipeline/xml';
import { DssRefusal } from './errors';

export function children(parent: Element, ns: string, name: string): Element[] {
  return childrenNS(parent, ns, name);
}

/** The one child of that name, or undefined; two are a malformed request. */
export function optionalChild(parent: Element, ns: string, name: string): Element | undefined {
  const found = childrenNS(parent, ns, name);
  if (found.length > 1) throw new DssRefusal('REQUESTER_ERROR', `${name} appears more than once`);
  return found[0];
}

export function requiredChild(parent: Element, ns: string, name: string): Element {
  const found = optionalChild(parent, ns, name);
  if (found === undefined) throw new DssRefusal('REQUESTER_ERROR', `${name} is missing`);
  return found;
}

/** An element's text, trimmed. */
export function textOf(element: Element): string {
  return (element.textContent ?? '').trim();
}

export function attribute(element: Element, name: string): string | undefined {
  return element.hasAttribute(name) ? (element.getAttribute(name) ?? undefined) : undefined;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Base64 content (white space allowed, as xs:base64Binary), strictly decoded. */
export function base64Of(element: Element, what: string): Buffer {
  const compact = textOf(element).replace(/\s+/g, '');
  if (compact.length % 4 !== 0 || !BASE64.test(compact)) {
    throw new DssRefusal('REQUESTER_ERROR', `${what} is not base64`);
  }
  return Buffer.from(compact, 'base64');
}

/** An xs:dateTime with a time zone (a local time would depend on the reader's zone). */
export function dateTimeOf(value: string, what: string): Date {
  if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(value)) {
    throw new DssRefusal('REQUESTER_ERROR', `${what} is not a dateTime with a time zone`);
  }
  const date = new Date(value);
  if (Number.isNaN(date.getTime()))
    throw new DssRefusal('REQUESTER_ERROR', `${what} is not a valid dateTime`);
  return date;
}
