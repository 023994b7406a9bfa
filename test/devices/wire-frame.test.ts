import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { WebSocket, WebSocketServer } from 'ws';
import { wireTextFrame } from '../../src/devices/protocol.js';

// Live frames are framed once by the gateway and written to each device's socket as bytes: a real
// WebSocket client must read them as the text they carry, at every length encoding.
describe('wire text frames', () => {
  it('a ws client reads frames of every length class as the text written', async () => {
    const lengths = [0, 1, 125, 126, 127, 65_535, 65_536, 300_000];
    // Byte lengths at each boundary of the 7-, 16- and 64-bit length encodings, and one multi-byte text.
    const texts = [...lengths.map((n) => 'x'.repeat(n)), 'alarme incendie: bâtiment é'.repeat(10)];
    const wss = new WebSocketServer({ noServer: true });
    const server = createServer();
    server.on('upgrade', (req, socket, head) => {
      wss.handleUpgrade(req, socket, head, () => {
        for (const text of texts) socket.write(wireTextFrame(Buffer.from(text)));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const client = new WebSocket(`ws://127.0.0.1:${port}/`);
    const received: string[] = [];
    await new Promise<void>((resolve, reject) => {
      client.on('message', (data, isBinary) => {
        assert.equal(isBinary, false);
        received.push(data.toString());
        if (received.length === texts.length) resolve();
      });
      client.on('error', reject);
    });
    client.close();
    wss.close();
    server.close();
    assert.deepEqual(received, texts);
  });
});
