#!/usr/bin/env python3
"""An independent check of an OMS v1.0 key-method signature, written from
model_signing's verifier (sign_ec_key.Verifier, signing.Verifier.verify,
signing.dsse_payload_to_manifest, verifying.Config.verify) with Python's
cryptography, to test what rlgate signs against code rlgate did not write.

usage: verify_oms.py MODEL_DIR SIGNATURE PUBLIC_KEY_PEM [IGNORE_PATH...]
Prints "OK ..." and exits 0, or says what failed and exits 1.
"""
import base64
import hashlib
import json
import os
import sys

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec


def fail(msg):
    print("FAIL", msg)
    sys.exit(1)


def main():
    model, sig, pub = sys.argv[1:4]
    extra = sys.argv[4:]
    bundle = json.load(open(sig))
    if not bundle.get("mediaType", "").startswith("application/vnd.dev.sigstore.bundle"):
        fail("media type")
    raw = open(pub, "rb").read()
    key = serialization.load_pem_public_key(raw[raw.index(b"-----BEGIN"):])
    pem = key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    hint = bundle["verificationMaterial"]["publicKey"].get("hint")
    if hint is not None and hint != hashlib.sha256(pem).hexdigest():
        fail("key hint")
    env = bundle["dsseEnvelope"]
    payload = base64.b64decode(env["payload"])
    ptype = env["payloadType"].encode()
    if ptype != b"application/vnd.in-toto+json":
        fail("payload type")
    pae = b"DSSEv1 %d %s %d %s" % (len(ptype), ptype, len(payload), payload)
    digest = {256: hashes.SHA256(), 384: hashes.SHA384(), 521: hashes.SHA512()}[key.curve.key_size]
    try:
        key.verify(base64.b64decode(env["signatures"][0]["sig"]), pae, ec.ECDSA(digest))
    except Exception:
        fail("signature")
    st = json.loads(payload)
    if st["_type"] != "https://in-toto.io/Statement/v1" or st["predicateType"] != "https://model_signing/signature/v1.0":
        fail("statement type")
    pred = st["predicate"]
    ser = pred["serialization"]
    if (ser["method"], ser["hash_type"], ser["allow_symlinks"]) != ("files", "sha256", False):
        fail("serialization")
    root = hashlib.sha256()
    for r in pred["resources"]:
        root.update(bytes.fromhex(r["digest"]))
    if len(st["subject"]) != 1 or root.hexdigest() != st["subject"][0]["digest"]["sha256"]:
        fail("root digest")
    ignore = set(ser.get("ignore_paths", [])) | {".git", ".gitattributes", ".github", ".gitignore"} | set(extra)
    ignore.add(os.path.relpath(sig, model))
    got = {}
    for dirpath, _, files in os.walk(model):
        for f in files:
            rel = os.path.relpath(os.path.join(dirpath, f), model).replace(os.sep, "/")
            if any(rel == i or rel.startswith(i + "/") for i in ignore):
                continue
            got[rel] = hashlib.sha256(open(os.path.join(dirpath, f), "rb").read()).hexdigest()
    if got != {r["name"]: r["digest"] for r in pred["resources"] if r["algorithm"] == "sha256"}:
        fail("files")
    print("OK", len(got), "files, root sha256:" + root.hexdigest())


main()
