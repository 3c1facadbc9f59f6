/**
 * C_GenerateKey with a template that holds templates. pkcs11js passes flat attribute values only, while
 * CKA_UNWRAP_TEMPLATE and CKA_WRAP_TEMPLATE are arrays of CK_ATTRIBUTE pointing at further memory, so this
 * one call goes through koffi (a C FFI) into the same loaded module, on a session pkcs11js opened. Only
 * the provisioning of the wrapping key needs it: no Lambda function imports this file, and koffi is
 * loaded on first use.
 */
import type * as Koffi from 'koffi';
import { HsmError } from '@pipeline/core/shared';
import { ckrName } from './errors';
import type { NestedTemplate } from './templates';

interface Native {
  readonly koffi: typeof Koffi;
  readonly attribute: Koffi.TypeObject;
  readonly mechanism: Koffi.TypeObject;
  readonly generateKeyType: Koffi.TypeObject;
  readonly ulongBytes: number;
}

let native: Native | undefined;
const functionLists = new Map<string, unknown>();

/** CK_FUNCTION_LIST: a CK_VERSION padded to a pointer, then the PKCS#11 v2.40 functions in order. */
const C_GENERATE_KEY_INDEX = 58;

function load(): Native {
  if (native) return native;
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded only when a key is provisioned
  const koffi = require('koffi') as typeof Koffi;
  native = {
    koffi,
    attribute: koffi.struct('P11_CK_ATTRIBUTE', {
      type: 'unsigned long',
      pValue: 'void *',
      ulValueLen: 'unsigned long',
    }),
    mechanism: koffi.struct('P11_CK_MECHANISM', {
      mechanism: 'unsigned long',
      pParameter: 'void *',
      ulParameterLen: 'unsigned long',
    }),
    generateKeyType: koffi.proto(
      'unsigned long P11_C_GenerateKey(unsigned long session, P11_CK_MECHANISM *mechanism, P11_CK_ATTRIBUTE *template, unsigned long count, _Out_ unsigned long *key)',
    ),
    ulongBytes: koffi.sizeof('unsigned long'),
  };
  return native;
}

function functionList(n: Native, modulePath: string): unknown {
  let list = functionLists.get(modulePath);
  if (list === undefined) {
    const getFunctionList = n.koffi
      .load(modulePath)
      .func('unsigned long C_GetFunctionList(_Out_ void **list)');
    const out: unknown[] = [null];
    const rv = Number(getFunctionList(out));
    if (rv !== 0)
      throw new HsmError(`C_GetFunctionList failed with ${ckrName(rv)}`, 'load module', rv, ckrName(rv));
    list = out[0];
    functionLists.set(modulePath, list);
  }
  return list;
}

/** Encodes a template into native memory; every allocation is recorded for the caller to free. */
function encodeTemplate(
  n: Native,
  template: NestedTemplate,
  allocations: unknown[],
): { pointer: unknown; bytes: number } {
  const attributes = template.map((attribute) => {
    if (Array.isArray(attribute.value)) {
      const inner = encodeTemplate(n, attribute.value as NestedTemplate, allocations);
      return { type: attribute.type, pValue: inner.pointer, ulValueLen: inner.bytes };
    }
    const bytes = valueBytes(n, attribute.value as boolean | number | string | Buffer);
    const pointer = n.koffi.alloc('uint8_t', Math.max(bytes.length, 1));
    allocations.push(pointer);
    new Uint8Array(n.koffi.view(pointer, bytes.length)).set(bytes);
    return { type: attribute.type, pValue: pointer, ulValueLen: bytes.length };
  });
  const pointer = n.koffi.alloc(n.attribute, attributes.length);
  allocations.push(pointer);
  n.koffi.encode(pointer, n.koffi.array(n.attribute, attributes.length), attributes);
  return { pointer, bytes: attributes.length * n.koffi.sizeof(n.attribute) };
}

/** The bytes pkcs11js would pass for a flat value: CK_BBOOL, CK_ULONG, UTF-8 or the buffer itself. */
function valueBytes(n: Native, value: boolean | number | string | Buffer): Buffer {
  if (typeof value === 'boolean') return Buffer.from([value ? 1 : 0]);
  if (typeof value === 'string') return Buffer.from(value, 'utf8');
  if (Buffer.isBuffer(value)) return value;
  const out = Buffer.alloc(n.ulongBytes);
  out.writeUIntLE(value, 0, Math.min(n.ulongBytes, 6));
  return out;
}

/** C_GenerateKey(session, mechanism, template) where the template may nest; returns the new handle. */
export function generateKeyWithNestedTemplate(
  modulePath: string,
  session: Buffer,
  mechanism: number,
  template: NestedTemplate,
): Buffer {
  const n = load();
  const pointerBytes = n.koffi.sizeof('void *');
  const generateKey = n.koffi.decode(
    functionList(n, modulePath),
    (1 + C_GENERATE_KEY_INDEX) * pointerBytes,
    'void *',
  );
  const allocations: unknown[] = [];
  try {
    const encoded = encodeTemplate(n, template, allocations);
    const handle = [0];
    const rv = Number(
      n.koffi.call(
        generateKey,
        n.generateKeyType,
        session.readUIntLE(0, Math.min(session.length, 6)),
        { mechanism, pParameter: null, ulParameterLen: 0 },
        encoded.pointer,
        template.length,
        handle,
      ),
    );
    if (rv !== 0)
      throw new HsmError(`generate key failed with ${ckrName(rv)}`, 'generate key', rv, ckrName(rv));
    const out = Buffer.alloc(session.length);
    out.writeUIntLE(Number(handle[0]), 0, Math.min(out.length, 6));
    return out;
  } finally {
    for (const pointer of allocations) n.koffi.free(pointer);
  }
}
