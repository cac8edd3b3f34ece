/**
 * TensorBoard event files written by hand: TFRecord framing (length, masked CRC-32C of the length,
 * data, masked CRC-32C of the data) around `Event` protobufs with scalar summaries. Only the
 * fields TensorBoard reads for scalars: Event { wall_time = 1 (double), step = 2 (int64),
 * file_version = 3 (string), summary = 5 } and Summary.Value { tag = 1, simple_value = 2 (float) }.
 */

const CRC32C_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

export function crc32c(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const b of bytes) crc = (CRC32C_TABLE[(crc ^ b) & 0xff] as number) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** TFRecord's masking, so that a CRC over data holding CRCs stays strong. */
export function maskedCrc32c(bytes: Uint8Array): number {
  const crc = crc32c(bytes);
  return (((crc >>> 15) | (crc << 17)) + 0xa282ead8) >>> 0;
}

function varint(value: number | bigint): number[] {
  let v = BigInt(value);
  if (v < 0n) v += 1n << 64n;
  const out: number[] = [];
  do {
    const byte = Number(v & 0x7fn);
    v >>= 7n;
    out.push(v > 0n ? byte | 0x80 : byte);
  } while (v > 0n);
  return out;
}

const utf8 = new TextEncoder();

function lengthDelimited(field: number, payload: Uint8Array): number[] {
  return [...varint((field << 3) | 2), ...varint(payload.length), ...payload];
}

function fixed(field: number, wireType: 1 | 5, value: number): number[] {
  const bytes = new Uint8Array(wireType === 1 ? 8 : 4);
  const view = new DataView(bytes.buffer);
  if (wireType === 1) view.setFloat64(0, value, true);
  else view.setFloat32(0, value, true);
  return [...varint((field << 3) | wireType), ...bytes];
}

function scalarValue(tag: string, value: number): Uint8Array {
  return new Uint8Array([...lengthDelimited(1, utf8.encode(tag)), ...fixed(2, 5, value)]);
}

/** The `Event` carrying the file's format version, which TensorBoard expects first in a file. */
export function fileVersionEvent(wallTimeSeconds: number): Uint8Array {
  return new Uint8Array([...fixed(1, 1, wallTimeSeconds), ...lengthDelimited(3, utf8.encode('brain.Event:2'))]);
}

/** One `Event` with a summary of scalar values at a step. */
export function scalarsEvent(wallTimeSeconds: number, step: number, scalars: Record<string, number>): Uint8Array {
  const summary: number[] = [];
  for (const [tag, value] of Object.entries(scalars)) summary.push(...lengthDelimited(1, scalarValue(tag, value)));
  return new Uint8Array([
    ...fixed(1, 1, wallTimeSeconds),
    ...varint((2 << 3) | 0),
    ...varint(step),
    ...lengthDelimited(5, new Uint8Array(summary)),
  ]);
}

/** One TFRecord: the record's length and data, each followed by its masked CRC-32C. */
export function tfRecord(data: Uint8Array): Uint8Array {
  const out = new Uint8Array(8 + 4 + data.length + 4);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(data.length), true);
  view.setUint32(8, maskedCrc32c(out.subarray(0, 8)), true);
  out.set(data, 12);
  view.setUint32(12 + data.length, maskedCrc32c(data), true);
  return out;
}

/** A whole event file for one step: the version record, then the step's scalars. */
export function stepEventFile(wallTimeSeconds: number, step: number, scalars: Record<string, number>): Uint8Array {
  const records = [tfRecord(fileVersionEvent(wallTimeSeconds)), tfRecord(scalarsEvent(wallTimeSeconds, step, scalars))];
  const out = new Uint8Array(records.reduce((n, r) => n + r.length, 0));
  let at = 0;
  for (const r of records) {
    out.set(r, at);
    at += r.length;
  }
  return out;
}

/**
 * The step's file name: one file per step, zero-padded so names sort in step order (TensorBoard
 * reads a directory's event files in name order), and the same name on a retry, which replaces it.
 */
export function stepEventFileName(step: number): string {
  return `events.out.tfevents.${String(step).padStart(10, '0')}.attune`;
}
