import assert from 'node:assert/strict';
import { once } from 'node:events';
import { type AddressInfo, connect, createServer, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { CHECKED_NODE_MAJORS, writableDescriptor } from '../../src/devices/socket-descriptor.js';

// The helper-thread fan-out reads a private member of Node's sockets: this holds it to the Node
// versions it was checked on, so an upgrade to a new major fails here until it is checked again.
describe('socket descriptor (the one private member read)', () => {
  it('runs on a Node major it was checked on', () => {
    const major = Number(process.versions.node.split('.')[0]);
    assert.ok(
      CHECKED_NODE_MAJORS.includes(major),
      `Node ${major} is not among the checked majors ${CHECKED_NODE_MAJORS.join(', ')}: check socket-descriptor.ts`,
    );
  });

  it("gives a connected TCP socket's descriptor, and -1 once data is queued in Node or the socket is closed", async () => {
    let accepted: Socket | undefined;
    const server = createServer((s) => {
      accepted = s;
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const client = connect((server.address() as AddressInfo).port, '127.0.0.1');
    await once(client, 'connect');
    while (!accepted) await new Promise((r) => setTimeout(r, 5));
    const fd = writableDescriptor(accepted);
    assert.ok(Number.isInteger(fd) && fd > 2, `a descriptor (${fd})`);
    accepted.cork();
    accepted.write('queued');
    assert.equal(writableDescriptor(accepted), -1, 'nothing is written directly past data queued in Node');
    accepted.uncork();
    accepted.destroy();
    assert.equal(writableDescriptor(accepted), -1);
    client.destroy();
    server.close();
  });
});
