import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type MessagesFixture, messagesFixture } from './setup.js';

describe('messages: link attachments', () => {
  let fx: MessagesFixture;
  let path: string;
  before(async () => {
    fx = await messagesFixture();
    ({ path } = await fx.newEmergency());
  });
  after(() => fx.server.close());

  const refused: [string, string][] = [
    // scheme
    ['http://media.example.com/a.png', 'scheme_not_allowed'],
    ['ftp://media.example.com/a.png', 'scheme_not_allowed'],
    ['javascript:alert(1)', 'scheme_not_allowed'],
    ['file:///etc/passwd', 'scheme_not_allowed'],
    // credentials
    ['https://user:pass@media.example.com/a.png', 'credentials_not_allowed'],
    ['https://user@media.example.com/a.png', 'credentials_not_allowed'],
    ['https://:secret@media.example.com/', 'credentials_not_allowed'],
    // ports
    ['https://media.example.com:8443/a.png', 'port_not_allowed'],
    ['https://media.example.com:80/', 'port_not_allowed'],
    // IPv4 private, loopback, link-local, CGNAT, multicast, reserved, unspecified, broadcast
    ['https://127.0.0.1/', 'host_not_allowed'],
    ['https://10.1.2.3/', 'host_not_allowed'],
    ['https://172.16.0.1/', 'host_not_allowed'],
    ['https://192.168.1.1/', 'host_not_allowed'],
    ['https://169.254.169.254/latest/meta-data/', 'host_not_allowed'],
    ['https://100.64.0.1/', 'host_not_allowed'],
    ['https://224.0.0.1/', 'host_not_allowed'],
    ['https://240.0.0.1/', 'host_not_allowed'],
    ['https://198.18.0.1/', 'host_not_allowed'],
    ['https://192.0.2.10/', 'host_not_allowed'],
    ['https://0.0.0.0/', 'host_not_allowed'],
    ['https://255.255.255.255/', 'host_not_allowed'],
    // other spellings of IPv4
    ['https://2130706433/', 'host_not_allowed'], // decimal 127.0.0.1
    ['https://0177.0.0.1/', 'host_not_allowed'], // octal
    ['https://0x7f.0.0.1/', 'host_not_allowed'], // hex octet
    ['https://0x7f000001/', 'host_not_allowed'], // hex whole
    ['https://127.1/', 'host_not_allowed'], // short form
    ['https://0xa9.0xfe.0xa9.0xfe/', 'host_not_allowed'], // hex metadata address
    ['https://3232235777/', 'host_not_allowed'], // decimal 192.168.1.1
    // IPv6
    ['https://[::1]/', 'host_not_allowed'],
    ['https://[::]/', 'host_not_allowed'],
    ['https://[fe80::1]/', 'host_not_allowed'],
    ['https://[fc00::1]/', 'host_not_allowed'],
    ['https://[fd12:3456::1]/', 'host_not_allowed'],
    ['https://[ff02::1]/', 'host_not_allowed'],
    ['https://[2001:db8::1]/', 'host_not_allowed'],
    ['https://[64:ff9b::7f00:1]/', 'host_not_allowed'], // NAT64 of 127.0.0.1
    ['https://[::ffff:127.0.0.1]/', 'host_not_allowed'], // v4-mapped
    ['https://[::ffff:a9fe:a9fe]/', 'host_not_allowed'], // v4-mapped 169.254.169.254 in hex
    ['https://[::ffff:10.0.0.1]/', 'host_not_allowed'],
    ['https://[::127.0.0.1]/', 'host_not_allowed'], // deprecated v4-compatible
    // names
    ['https://localhost/', 'host_not_allowed'],
    ['https://LOCALHOST./', 'host_not_allowed'],
    ['https://api.localhost/', 'host_not_allowed'],
    ['https://intranet/', 'host_not_allowed'],
    ['https://metadata.google.internal/', 'host_not_allowed'],
    ['https://printer.local/', 'host_not_allowed'],
    ['https://router.home.arpa/', 'host_not_allowed'],
    // not URLs at all
    ['https://', 'invalid_url'],
    ['https://exa mple.com/', 'invalid_url'],
    ['https://example.com/\nfoo', 'invalid_url'],
    ['www.example.com/video.mp4', 'invalid_url'],
    ['https://1.2.3.999/', 'invalid_url'],
    [`https://example.com/${'a'.repeat(4100)}`, 'invalid_url'],
  ];

  for (const [src, code] of refused) {
    it(`refuses ${JSON.stringify(src.length > 80 ? `${src.slice(0, 40)}…` : src)} with ${code}`, async () => {
      const res = await fx.api.post(path, { content: 'x', attachments: ['https://ok.example.com/a.png', { src }] });
      assert.equal(res.status, 422, JSON.stringify(res.body));
      assert.deepEqual([res.body.detail.error, res.body.detail.index], [code, 1], JSON.stringify(res.body));
    });
  }

  it('a refused link creates no message', async () => {
    const { emergencyId, path: p } = await fx.newEmergency();
    const res = await fx.api.post(p, { attachments: 'https://10.0.0.1/x.m3u8' });
    assert.equal(res.status, 422);
    assert.equal((await fx.counts(emergencyId)).messages, 0);
  });

  const accepted: { src: string; type?: string; kind: string; mimeType: string | null }[] = [
    { src: 'https://cdn.example.com/live/cam1.m3u8', kind: 'hls_video', mimeType: 'application/vnd.apple.mpegurl' },
    { src: 'https://cdn.example.com/live/cam1.M3U8?token=abc', kind: 'hls_video', mimeType: 'application/vnd.apple.mpegurl' },
    { src: 'https://cdn.example.com/p/photo.JPG', kind: 'image', mimeType: null },
    { src: 'https://cdn.example.com/p/clip.mp4#t=10', kind: 'video', mimeType: null },
    { src: 'https://cdn.example.com/p/siren.mp3', kind: 'audio', mimeType: null },
    { src: 'https://cdn.example.com/p/floorplan.pdf', kind: 'link', mimeType: null },
    { src: 'https://www.example.com/incident/42', kind: 'link', mimeType: null },
    { src: 'https://example.com.:443/page', kind: 'link', mimeType: null },
    { src: 'https://93.184.215.14/camera', kind: 'link', mimeType: null },
    { src: 'https://[2606:4700:4700::1111]/x.png', kind: 'image', mimeType: null },
    { src: 'https://xn--bcher-kva.example/a.webp', kind: 'image', mimeType: null },
    { src: 'https://cdn.example.com/stream', type: 'hls_video', kind: 'hls_video', mimeType: 'application/vnd.apple.mpegurl' },
    { src: 'https://cdn.example.com/stream', type: 'application/x-mpegURL', kind: 'hls_video', mimeType: 'application/x-mpegURL' },
    { src: 'https://cdn.example.com/p/photo.jpg', type: 'file', kind: 'file', mimeType: null },
    { src: 'https://cdn.example.com/p/photo.jpg', type: 'link', kind: 'link', mimeType: null },
    { src: 'https://cdn.example.com/doc', type: 'application/pdf', kind: 'file', mimeType: 'application/pdf' },
    { src: 'https://cdn.example.com/v', type: 'video/webm', kind: 'video', mimeType: 'video/webm' },
    { src: 'https://cdn.example.com/page', type: 'text/html', kind: 'link', mimeType: 'text/html' },
    { src: 'https://cdn.example.com/a', type: 'IMAGE', kind: 'image', mimeType: null },
  ];

  for (const a of accepted) {
    it(`accepts ${a.src}${a.type ? ` typed ${a.type}` : ''} as ${a.kind}`, async () => {
      const res = await fx.api.post(path, { attachments: [{ src: a.src, ...(a.type ? { type: a.type } : {}), caption: 'cam' }] });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      const [att] = res.body.attachments;
      assert.deepEqual(
        {
          kind: att.kind,
          mimeType: att.mimeType,
          url: att.url,
          source: att.source,
          sizeBytes: att.sizeBytes,
          width: att.width,
          height: att.height,
          caption: att.caption,
        },
        { kind: a.kind, mimeType: a.mimeType, url: a.src, source: 'url', sizeBytes: null, width: null, height: null, caption: 'cam' },
      );
    });
  }

  it('refuses a declared type that is neither a media type nor a kind', async () => {
    const res = await fx.api.post(path, { attachments: [{ src: 'https://cdn.example.com/a', type: 'banana' }] });
    assert.equal(res.status, 422);
    assert.deepEqual([res.body.detail.error, res.body.detail.index], ['unsupported_media_type', 0]);
  });
});
