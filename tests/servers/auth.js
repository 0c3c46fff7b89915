// json-server middleware: every request needs the bearer token the test
// gives in QUIVER_TEST_API_TOKEN; anything else is 401.
module.exports = (req, res, next) =>
  req.headers.authorization === `Bearer ${process.env.QUIVER_TEST_API_TOKEN}`
    ? next()
    : res.status(401).jsonp({ error: "unauthorized" });
