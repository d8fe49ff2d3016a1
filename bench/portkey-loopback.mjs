// SPDX-License-Identifier: MIT
// portkey-loopback.mjs -- preloaded (node --import) into the Portkey gateway so that it
// listens on 127.0.0.1 only. Its start-server.js calls server.listen(port) with no host,
// which would bind every interface; the benchmark must stay on loopback. This wraps
// net.Server.prototype.listen and forces the host for TCP listens; nothing else changes.

import net from 'node:net';

const HOST = '127.0.0.1';
const listen = net.Server.prototype.listen;

net.Server.prototype.listen = function loopbackListen(...args) {
  const first = args[0];
  if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    // listen(port[, host][, backlog][, cb]): replace or insert the host.
    if (typeof args[1] === 'string' || args[1] === undefined || args[1] === null) args[1] = HOST;
    else args.splice(1, 0, HOST);
  } else if (first && typeof first === 'object' && first.path === undefined && first.fd === undefined &&
             first._handle === undefined && first.handle === undefined) {
    args[0] = { ...first, host: HOST };
  }
  return listen.apply(this, args);
};
