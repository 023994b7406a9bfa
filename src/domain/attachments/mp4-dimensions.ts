/**
 * Width and height of an MP4/QuickTime video from its first visual track header (`moov/trak/tkhd`, 16.16 fixed point, ISO/IEC
 * 14496-12). Audio tracks carry 0×0 there, so the first track with a non-zero size is the picture.
 */
export function mp4Dimensions(bytes: Buffer): { width: number; height: number } | null {
  const moov = findBox(bytes, 0, bytes.length, 'moov');
  if (!moov) return null;
  for (const trak of boxes(bytes, moov.start, moov.end)) {
    if (trak.type !== 'trak') continue;
    const tkhd = findBox(bytes, trak.start, trak.end, 'tkhd');
    if (!tkhd) continue;
    const size = tkhdSize(bytes, tkhd.start, tkhd.end);
    if (size && size.width > 0 && size.height > 0) return size;
  }
  return null;
}

interface Box {
  type: string;
  /** First byte of the payload (after the header). */
  start: number;
  /** One past the last byte of the box, clamped to the parent. */
  end: number;
}

function* boxes(bytes: Buffer, from: number, to: number): Generator<Box> {
  let offset = from;
  while (offset + 8 <= to) {
    let size = bytes.readUInt32BE(offset);
    const type = bytes.toString('latin1', offset + 4, offset + 8);
    let header = 8;
    if (size === 1) {
      if (offset + 16 > to) return;
      const large = bytes.readBigUInt64BE(offset + 8);
      if (large > BigInt(to - offset)) size = to - offset;
      else size = Number(large);
      header = 16;
    } else if (size === 0) {
      size = to - offset; // the box runs to the end of its parent
    }
    if (size < header) return; // corrupt: stop rather than loop
    const end = Math.min(offset + size, to);
    yield { type, start: offset + header, end };
    offset += size;
  }
}

function findBox(bytes: Buffer, from: number, to: number, type: string): Box | null {
  for (const box of boxes(bytes, from, to)) if (box.type === type) return box;
  return null;
}

function tkhdSize(bytes: Buffer, start: number, end: number): { width: number; height: number } | null {
  if (start + 1 > end) return null;
  const version = bytes[start];
  // version 0: 4-byte times and duration; version 1: 8-byte ones. Width/height follow the matrix.
  const sizeOffset = start + (version === 1 ? 88 : 76);
  if (sizeOffset + 8 > end) return null;
  const width = Math.round(bytes.readUInt32BE(sizeOffset) / 65536);
  const height = Math.round(bytes.readUInt32BE(sizeOffset + 4) / 65536);
  return { width, height };
}
