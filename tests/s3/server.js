// server.js - the S3-compatible test server: @20minutes/s3rver (verifies
// SigV4 signatures) on 127.0.0.1, a free port chosen by the kernel.
//
//   node --openssl-legacy-provider server.js DIR BUCKET...
//                                    prints "port N" once listening
//   (the flag: s3rver ciphers continuation tokens with a cipher Node 20
//   disables by default; paged listings fail without it)
//
// Credentials: access key S3RVER, secret S3RVER (s3rver's built-in account)
// plus the pair in $S3RVER_KEY_ID / $S3RVER_SECRET when both are set.
// Stops on SIGTERM / SIGINT. S3RVER_VERBOSE=1 logs every request.
// S3RVER_IDLE_TIMEOUT_MS (default 10000): a connection idle that long,
// mid-request or between requests, is closed.
// S3RVER_CONDITIONAL=1 adds conditional writes (If-None-Match / If-Match on
// PUT, CompleteMultipartUpload and DELETE), our own layer in conditional.js;
// S3RVER_CONDITIONAL=rgw compares If-Match as Ceph RGW 16 does.
// S3RVER_REQUEST_LOG=FILE appends one line per request, "KIND METHOD URL",
// KIND one of LIST (a GET of the bucket itself), GET, PUT, HEAD,
// DELETE, POST: tests and benchmarks count a command's requests as the
// lines it added (tests/e2e/s3lib.sh, s3_count).
'use strict'
const S3rver = require('@20minutes/s3rver')
const AWSAccount = require('@20minutes/s3rver/lib/models/account')
const FilesystemStore = require('@20minutes/s3rver/lib/stores/filesystem')

// s3rver 5.0.0 bug: with a delimiter, its directory walk prunes every
// directory two levels below the prefix, so "a/" lists no CommonPrefix "b/"
// when the only keys are "a/b/c/d" (real S3 does). List keys ourselves and
// group them; metadata is read only for the page's objects; maxKeys counts
// objects, as s3rver's controller (which builds the continuation token)
// expects.
const fs = require('node:fs')
const path = require('node:path')
const S3Object = require('@20minutes/s3rver/lib/models/object')
const SUFFIX = '._S3rver_object'
function walkKeys(root, rel, out) {
  let entries
  try {
    entries = fs.readdirSync(path.join(root, rel), { withFileTypes: true })
  } catch (err) {
    return
  }
  for (const e of entries) {
    const r = rel ? `${rel}/${e.name}` : e.name
    if (e.isDirectory()) walkKeys(root, r, out)
    else if (e.name.endsWith(SUFFIX)) out.push(r.slice(0, -SUFFIX.length))
  }
}
const listAll = FilesystemStore.prototype.listObjects
FilesystemStore.prototype.listObjects = async function (bucket, options) {
  const { delimiter = '', startAfter = '', prefix = '', maxKeys = Infinity } = options
  if (!delimiter) return listAll.call(this, bucket, options)
  const keys = []
  const dir = prefix.lastIndexOf('/') >= 0 ? prefix.slice(0, prefix.lastIndexOf('/')) : ''
  walkKeys(this.getBucketPath(bucket), dir, keys)
  keys.sort()
  const page = []
  const commonPrefixes = new Set()
  let isTruncated = false
  for (const key of keys) {
    if (key <= startAfter || !key.startsWith(prefix)) continue
    const idx = key.slice(prefix.length).indexOf(delimiter)
    if (idx !== -1) {
      const p = key.slice(0, prefix.length + idx + 1)
      if (p > startAfter) commonPrefixes.add(p)
      continue
    }
    if (page.length >= maxKeys) {
      isTruncated = true
      break
    }
    page.push(key)
  }
  const objects = []
  for (const key of page) {
    const metadata = await this.getMetadata(bucket, key).catch(() => undefined)
    if (metadata) objects.push(new S3Object(bucket, key, null, metadata))
  }
  return { objects, commonPrefixes: [...commonPrefixes].sort(), isTruncated }
}

// s3rver writes an object in place: a PUT that ends mid-body (its client
// died, or stalled past the idle timeout below) would leave a partial
// object that reads as the key's content, and a GET racing a PUT could read
// it half written. S3 keeps the previous object until a write completes;
// so do we: the body goes to a temporary file, renamed over the object once
// complete (its name does not end in the object suffix: never listed).
// Not a wrapper around s3rver's putContent: for a Buffer body it resolves
// before the bytes are written, so a rename after it could move a file
// still being written.
const crypto = require('node:crypto')
const { pipeline, Readable, Transform } = require('node:stream')
let partials = 0
FilesystemStore.prototype.putContent = function (objectPath, content) {
  const tmp = `${objectPath}.partial-${process.pid}-${partials++}`
  return new Promise((resolve, reject) => {
    const md5 = crypto.createHash('md5')
    let size = 0
    const count = new Transform({
      transform(chunk, encoding, callback) {
        md5.update(chunk, encoding)
        size += chunk.length
        callback(null, chunk)
      },
    })
    const source = Buffer.isBuffer(content) ? Readable.from([content]) : content
    pipeline(source, count, fs.createWriteStream(tmp), (err) => {
      if (err) fs.rm(tmp, { force: true }, () => reject(err))
      else fs.rename(tmp, objectPath, (e) => (e ? reject(e) : resolve([size, md5.digest('hex')])))
    })
  })
}

// One line per request as it arrives (synchronous: a command that has
// exited has every line of its requests in the file).
function countRequests(httpServer, file) {
  const fd = fs.openSync(file, 'a')
  httpServer.prependListener('request', (req) => {
    const list = req.method === 'GET' && /^\/[^/?]+\/?(\?|$)/.test(req.url) // the bucket itself
    fs.writeSync(fd, `${list ? 'LIST' : req.method} ${req.method} ${req.url}\n`)
  })
}

if (['1', 'rgw'].includes(process.env.S3RVER_CONDITIONAL)) require('./conditional').install()

const [dir, ...buckets] = process.argv.slice(2)
if (!dir || buckets.length === 0) {
  console.error('usage: node server.js DIR BUCKET...')
  process.exit(64)
}
if (process.env.S3RVER_KEY_ID && process.env.S3RVER_SECRET) {
  AWSAccount.DUMMY_ACCOUNT.createKeyPair(process.env.S3RVER_KEY_ID, process.env.S3RVER_SECRET)
}
const server = new S3rver({
  address: '127.0.0.1',
  port: Number(process.env.S3RVER_PORT || 0),
  directory: dir,
  silent: !process.env.S3RVER_VERBOSE,
  configureBuckets: buckets.map((name) => ({ name })),
})
server.run().then(
  (addr) => {
    // Like S3 (RequestTimeout after about 20 s), a request whose client
    // sends nothing for a while is dropped: a stalled upload must not hold
    // its key (conditional.js serialises a key's writes and reads) forever.
    server.httpServer.setTimeout(Number(process.env.S3RVER_IDLE_TIMEOUT_MS || 10000))
    if (process.env.S3RVER_REQUEST_LOG) countRequests(server.httpServer, process.env.S3RVER_REQUEST_LOG)
    console.log(`port ${addr.port}`)
  },
  (err) => {
    console.error(`s3rver: ${err.message}`)
    process.exit(69)
  }
)
// Open connections (a paused client's) do not hold the stop up.
const stop = () => {
  server.close().finally(() => process.exit(0))
  if (server.httpServer) server.httpServer.closeAllConnections()
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
