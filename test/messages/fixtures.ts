import { deflateSync } from 'node:zlib';

/** Real media files built byte by byte, so tests do not depend on binary fixtures. */

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes: Buffer): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** A complete, decodable RGB PNG of the given size (a red square). */
export function png(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type: RGB
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(width * 3, 0)]);
  for (let x = 0; x < width; x++) row[1 + x * 3] = 0xff;
  const raw = Buffer.concat(Array.from({ length: height }, () => row));
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', deflateSync(raw)),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A baseline JPEG header: SOI, JFIF APP0, a quantization table, SOF0 with the size, EOI. */
export function jpeg(width: number, height: number): Buffer {
  const app0 = Buffer.from([0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00]);
  const dqt = Buffer.concat([Buffer.from([0xff, 0xdb, 0x00, 0x43, 0x00]), Buffer.alloc(64, 1)]);
  const sof = Buffer.from([0xff, 0xc0, 0x00, 0x0b, 0x08, height >> 8, height & 0xff, width >> 8, width & 0xff, 0x01, 0x01, 0x11, 0x00]);
  return Buffer.concat([Buffer.from([0xff, 0xd8]), app0, dqt, sof, Buffer.from([0xff, 0xd9])]);
}

/** A one-colour GIF89a. */
export function gif(width: number, height: number): Buffer {
  const header = Buffer.alloc(13);
  header.write('GIF89a', 0, 'latin1');
  header.writeUInt16LE(width, 6);
  header.writeUInt16LE(height, 8);
  header[10] = 0x80; // global colour table of 2 entries
  const palette = Buffer.from([0xff, 0x00, 0x00, 0x00, 0x00, 0x00]);
  const image = Buffer.alloc(10);
  image[0] = 0x2c;
  image.writeUInt16LE(width, 5);
  image.writeUInt16LE(height, 7);
  const data = Buffer.from([0x02, 0x02, 0x44, 0x01, 0x00]);
  return Buffer.concat([header, palette, image, data, Buffer.from([0x3b])]);
}

/** An extended-format WebP (RIFF/WEBP with a VP8X chunk carrying the canvas size). */
export function webp(width: number, height: number): Buffer {
  const vp8x = Buffer.alloc(18);
  vp8x.write('VP8X', 0, 'latin1');
  vp8x.writeUInt32LE(10, 4);
  vp8x.writeUIntLE(width - 1, 12, 3);
  vp8x.writeUIntLE(height - 1, 15, 3);
  const riff = Buffer.alloc(12);
  riff.write('RIFF', 0, 'latin1');
  riff.writeUInt32LE(4 + vp8x.length, 4);
  riff.write('WEBP', 8, 'latin1');
  return Buffer.concat([riff, vp8x]);
}

function box(type: string, ...payload: Buffer[]): Buffer {
  const body = Buffer.concat(payload);
  const header = Buffer.alloc(8);
  header.writeUInt32BE(8 + body.length);
  header.write(type, 4, 'latin1');
  return Buffer.concat([header, body]);
}

function tkhd(width: number, height: number, version: 0 | 1): Buffer {
  const times = version === 1 ? 8 + 8 + 4 + 4 + 8 : 4 + 4 + 4 + 4 + 4;
  const payload = Buffer.alloc(4 + times + 8 + 2 + 2 + 2 + 2 + 36 + 8);
  payload[0] = version;
  payload[3] = 0x03; // enabled, in movie
  const size = payload.length - 8;
  payload.writeUInt32BE(width * 65536, size);
  payload.writeUInt32BE(height * 65536, size + 4);
  return box('tkhd', payload);
}

/**
 * An MP4 (or QuickTime with brand `qt  `) whose moov holds an audio track (0×0) and then a video
 * track with the given size in its tkhd; an mdat precedes moov, as many encoders write it.
 */
export function mp4(width: number, height: number, options: { brand?: string; tkhdVersion?: 0 | 1 } = {}): Buffer {
  const brand = options.brand ?? 'isom';
  const ftyp = box('ftyp', Buffer.from(`${brand}\0\0\x02\0${brand}mp41`, 'latin1'));
  const mvhd = box('mvhd', Buffer.alloc(100));
  const audio = box('trak', tkhd(0, 0, options.tkhdVersion ?? 0));
  const video = box('trak', tkhd(width, height, options.tkhdVersion ?? 0), box('mdia', Buffer.alloc(8)));
  return Buffer.concat([ftyp, box('mdat', Buffer.alloc(64, 7)), box('moov', mvhd, audio, video)]);
}

export function pdf(): Buffer {
  return Buffer.from(
    '%PDF-1.7\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\n' + 'trailer << /Root 1 0 R >>\n%%EOF\n',
    'latin1',
  );
}

/** An MPEG-1 Layer III frame header (128 kbit/s, 44.1 kHz) followed by its (silent) frame body. */
export function mp3Frame(): Buffer {
  return Buffer.concat([Buffer.from([0xff, 0xfb, 0x90, 0x64]), Buffer.alloc(413)]);
}

/** An ID3v2.4 tag (one TIT2 frame) in front of an MPEG audio frame. */
export function mp3WithId3(): Buffer {
  const title = Buffer.concat([Buffer.from([0x03]), Buffer.from('Alarm', 'utf8')]);
  const frameHeader = Buffer.alloc(10);
  frameHeader.write('TIT2', 0, 'latin1');
  frameHeader.writeUInt32BE(title.length, 4);
  const frames = Buffer.concat([frameHeader, title]);
  const tagHeader = Buffer.from([0x49, 0x44, 0x33, 0x04, 0x00, 0x00, 0, 0, 0, frames.length]);
  return Buffer.concat([tagHeader, frames, mp3Frame()]);
}

/** A PCM WAV file with a few samples of silence. */
export function wav(): Buffer {
  const samples = Buffer.alloc(64);
  const fmt = Buffer.alloc(16);
  fmt.writeUInt16LE(1, 0); // PCM
  fmt.writeUInt16LE(1, 2); // mono
  fmt.writeUInt32LE(8000, 4);
  fmt.writeUInt32LE(16000, 8);
  fmt.writeUInt16LE(2, 12);
  fmt.writeUInt16LE(16, 14);
  const chunk = (id: string, data: Buffer) => {
    const h = Buffer.alloc(8);
    h.write(id, 0, 'latin1');
    h.writeUInt32LE(data.length, 4);
    return Buffer.concat([h, data]);
  };
  const body = Buffer.concat([Buffer.from('WAVE', 'latin1'), chunk('fmt ', fmt), chunk('data', samples)]);
  const riff = Buffer.alloc(8);
  riff.write('RIFF', 0, 'latin1');
  riff.writeUInt32LE(body.length, 4);
  return Buffer.concat([riff, body]);
}

/** Deterministic noise (no magic number of any format at its start). */
export function noise(length: number, seed = 7): Buffer {
  const out = Buffer.alloc(length);
  let x = seed;
  for (let i = 0; i < length; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    out[i] = x >> 16;
  }
  return out;
}

export const dataUri = (mime: string, bytes: Buffer) => `data:${mime};base64,${bytes.toString('base64')}`;
