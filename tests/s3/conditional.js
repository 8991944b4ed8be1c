// conditional.js - OUR OWN TEST CODE, not part of s3rver: conditional
// requests for the S3 test server (server.js), which s3rver 5.0.0 ignores.
// Enabled by server.js when S3RVER_CONDITIONAL=1 (or =rgw: If-Match compared
// as Ceph RGW 16 does, see tagMatches); off by default so that the
// tests can also check how spotrun detects a server that ignores them.
//
// What it implements (AWS S3's documented semantics, "conditional writes"
// and "conditional deletes" in the S3 user guide):
//   PutObject, CopyObject (destination), CompleteMultipartUpload:
//     If-None-Match: *       412 PreconditionFailed when the key exists
//     If-Match: "<etag>"     404 NoSuchKey when the key does not exist,
//                            412 PreconditionFailed when its ETag differs
//     If-None-Match with anything but "*" is refused (501 NotImplemented;
//     S3 accepts only "*" on writes)
//   DeleteObject:   If-Match ("*" or an ETag) as above; 204 otherwise
//   GetObject / HeadObject: If-Match -> 412 on a different ETag (s3rver
//     already answers If-None-Match with 304, as S3 does)
//
// DESIGN: it wraps the functions of s3rver's object controller that the
// router calls at request time, so it runs after SigV4 verification of the
// headers and before the body is read (s3rver reads and verifies the body
// itself, afterwards, as without this layer). Every write and delete of a
// key (conditional or not) holds that key's lock, a promise chain, from the
// check until the object and its metadata are on disk, so a check and its
// write are atomic with respect to every other write of the key. Where real
// S3 answers a lost race with 409 ConditionalRequestConflict, this layer
// serialises the racers and the loser gets the 412 (or 404) of its check.
// A PUT that fails mid-body leaves the previous object as it was
// (server.js writes a body to a temporary file and renames it over the
// object), and a client that stalls mid-body is dropped after the server's
// idle timeout, releasing the key's lock.
'use strict'
const objectCtrl = require('@20minutes/s3rver/lib/controllers/object')
const S3Error = require('@20minutes/s3rver/lib/models/error')

// The tail of each key's chain of writes; absent when no write is pending.
const locks = new Map()

async function withKeyLock(bucket, key, fn) {
  const id = `${bucket}\0${key}`
  const prev = locks.get(id) || Promise.resolve()
  let release
  const mine = new Promise((resolve) => (release = resolve))
  const tail = prev.then(() => mine)
  locks.set(id, tail)
  await prev
  try {
    return await fn()
  } finally {
    release()
    if (locks.get(id) === tail) locks.delete(id)
  }
}

// An entity tag as compared: without W/ and the quotes (S3 compares the
// value, with or without quotes).
const bareTag = (t) => t.trim().replace(/^W\//, '').replace(/^"(.*)"$/, '$1')

// S3RVER_CONDITIONAL=rgw: If-Match as Ceph RGW 16 compares it (measured,
// docs/s3.md): the header's bytes against the ETag without its quotes, so
// a quoted ETag never matches and only the bare one does.
const rgwTags = process.env.S3RVER_CONDITIONAL === 'rgw'

// RFC 7232 If-Match: "*" or a comma-separated list of entity tags.
function tagMatches(header, etag) {
  if (header.trim() === '*') return true
  const have = bareTag(etag)
  if (rgwTags) return header.trim() === have
  return header.split(',').some((t) => bareTag(t) === have)
}

// The current ETag of the key (quoted, as s3rver stores it) or null.
async function currentEtag(ctx, bucket, key) {
  try {
    return (await ctx.store.getMetadata(bucket, key)).etag
  } catch (err) {
    if (err.code === 'ENOENT') return null
    throw err
  }
}

function preconditionFailed(ctx, condition) {
  // The body is not read: let Node discard it so the connection stays usable.
  ctx.req.resume()
  return new S3Error(
    'PreconditionFailed',
    'At least one of the pre-conditions you specified did not hold',
    { Condition: condition }
  )
}

function noSuchKey(ctx, key) {
  ctx.req.resume()
  return new S3Error('NoSuchKey', 'The specified key does not exist.', { Key: key })
}

// Throws the S3 error of the first precondition that does not hold.
async function checkWrite(ctx, bucket, key) {
  const ifMatch = ctx.get('if-match')
  const ifNoneMatch = ctx.get('if-none-match')
  if (ifNoneMatch && ifNoneMatch.trim() !== '*') {
    ctx.req.resume()
    throw new S3Error(
      'NotImplemented',
      'A header you provided implies functionality that is not implemented',
      { Header: 'If-None-Match' }
    )
  }
  if (!ifMatch && !ifNoneMatch) return
  const etag = await currentEtag(ctx, bucket, key)
  if (ifMatch) {
    if (etag === null) throw noSuchKey(ctx, key)
    if (!tagMatches(ifMatch, etag)) throw preconditionFailed(ctx, 'If-Match')
  }
  if (ifNoneMatch && etag !== null) throw preconditionFailed(ctx, 'If-None-Match')
}

function guardWrite(name) {
  const original = objectCtrl[name]
  objectCtrl[name] = function conditionalWrite(ctx) {
    const { bucket, key } = ctx.params
    return withKeyLock(bucket, key, async () => {
      await checkWrite(ctx, bucket, key)
      return original.call(this, ctx)
    })
  }
}

function install() {
  for (const name of ['putObject', 'putObjectCopy', 'completeMultipartUpload']) guardWrite(name)

  const deleteObject = objectCtrl.deleteObject
  objectCtrl.deleteObject = function conditionalDelete(ctx) {
    const { bucket, key } = ctx.params
    return withKeyLock(bucket, key, async () => {
      const ifMatch = ctx.get('if-match')
      if (ifMatch) {
        const etag = await currentEtag(ctx, bucket, key)
        if (etag === null) throw noSuchKey(ctx, key)
        if (!tagMatches(ifMatch, etag)) throw preconditionFailed(ctx, 'If-Match')
      }
      return deleteObject.call(this, ctx)
    })
  }

  // s3rver writes an object in place, so a GET racing a write of the same
  // key can read it half written (an empty LEASE, say); S3's reads are
  // atomic. Under the key's lock, a small object's body is read whole
  // before the next write may start (larger ones still stream).
  const getObject = objectCtrl.getObject
  objectCtrl.getObject = function conditionalGet(ctx) {
    const { bucket, key } = ctx.params
    return withKeyLock(bucket, key, async () => {
      const ifMatch = ctx.get('if-match')
      if (ifMatch) {
        // A missing key stays s3rver's 404 NoSuchKey.
        const etag = await currentEtag(ctx, bucket, key)
        if (etag !== null && !tagMatches(ifMatch, etag)) throw preconditionFailed(ctx, 'If-Match')
      }
      const result = await getObject.call(this, ctx)
      const body = ctx.body
      if (body && typeof body.pipe === 'function' && ctx.length <= ATOMIC_READ_MAX) {
        const chunks = []
        for await (const chunk of body) chunks.push(chunk)
        ctx.body = Buffer.concat(chunks)
      }
      return result
    })
  }
}

const ATOMIC_READ_MAX = 16 << 20

module.exports = { install }
