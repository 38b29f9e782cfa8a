// Preloaded (node --require) into backends that listen on every interface by default
// (server-everything's Express app calls app.listen(PORT)): a listen without a host
// binds 127.0.0.1, as every process of the interop lanes must.
const net = require('node:net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
    if (typeof args[0] === 'number' || (typeof args[0] === 'string' && /^\d+$/.test(args[0]))) {
        if (typeof args[1] !== 'string') args.splice(1, 0, '127.0.0.1');
    } else if (args[0] && typeof args[0] === 'object' && args[0].port !== undefined && !args[0].host) {
        args[0] = { ...args[0], host: '127.0.0.1' };
    }
    return listen.apply(this, args);
};
