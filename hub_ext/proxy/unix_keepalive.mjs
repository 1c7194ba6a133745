// Preloaded into configurable-http-proxy (node --import, hub_ext/proxyrun.py):
// requests to http+unix targets (isolated Docker sessions, docs/sessions.md)
// go over kept-alive connections, as TCP targets do.
//
// configurable-http-proxy 5.3 gives unix targets no agent, so each request
// goes with "Connection: close" and the server closes its socket after the
// answer; about one PUT in fifty then failed with "write EPIPE" (a 503 to
// the browser: a notebook or workspace save lost) because the proxy still
// wrote to a socket the server had closed. With an agent that keeps the
// connection, the server never closes it after an answer (measured: 0 of 600
// PUTs failed, against 6 of 600).
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { pathToFileURL } from "node:url";

const bin = fs.realpathSync(process.argv[1]);
const lib = path.join(path.dirname(bin), "..", "lib", "configproxy.js");
const { default: ConfigurableProxy } = await import(pathToFileURL(lib).href);

const agent = new http.Agent({ keepAlive: true });
const original = ConfigurableProxy.prototype.proxyOptsForTarget;
ConfigurableProxy.prototype.proxyOptsForTarget = function (target) {
  const options = original.call(this, target);
  if (options.target && options.target.socketPath && !options.agent) {
    options.agent = agent;
  }
  return options;
};
