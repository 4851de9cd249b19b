/*
 * Preloaded (node --require) into servers that listen on every interface
 * when given only a port (server-everything's Streamable HTTP mode,
 * supergateway): a listen without a host listens on 127.0.0.1 instead, as
 * every server the tests and benchmarks start must.
 */
'use strict';
const net = require('node:net');
const listen = net.Server.prototype.listen;

net.Server.prototype.listen = function (...args) {
	const a = args[0];
	if (typeof a === 'number' || (typeof a === 'string' && /^[0-9]+$/.test(a))) {
		if (typeof args[1] !== 'string')
			args.splice(1, 0, '127.0.0.1');
	} else if (a !== null && typeof a === 'object' && a.port !== undefined &&
	    a.host === undefined && a.path === undefined) {
		args[0] = { ...a, host: '127.0.0.1' };
	}
	return listen.apply(this, args);
};
