// json-server middleware: each request's W3C trace headers, one JSON line
// on stdout (`{"seen": "GET /books/7", "traceparent": …}`), for the tests
// that check what a connector's API receives.
module.exports = (req, res, next) => {
  const header = (name) => req.headers[name] ?? null;
  console.log(JSON.stringify({
    seen: `${req.method} ${req.url}`,
    traceparent: header("traceparent"),
    tracestate: header("tracestate"),
    baggage: header("baggage"),
  }));
  next();
};
