/*
 * version.c - `spotrun --version`: what a bug report and a package check
 * need in one screen. The version and commit are fixed at configure time
 * (SPOTRUN_VERSION, SPOTRUN_COMMIT: "unknown" outside a git checkout, or
 * what a packager passes as -DSPOTRUN_GIT_COMMIT); the libraries' versions
 * are asked of the libraries loaded now, so a mismatch between the build
 * and the machine shows; the shim line says where `run` finds
 * libspotrun.so, the check that a relocated install is whole.
 */
#include <archive.h>
#include <curl/curl.h>
#include <jansson.h>
#include <limits.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include "cli.h"

#ifndef SPOTRUN_VERSION
#define SPOTRUN_VERSION "0.0.0"
#endif
#ifndef SPOTRUN_COMMIT
#define SPOTRUN_COMMIT "unknown"
#endif
#ifndef SPOTRUN_BUILD_TYPE
#define SPOTRUN_BUILD_TYPE "unknown"
#endif

#if defined(__SANITIZE_ADDRESS__)
#define SR_SANITIZERS "address,undefined"
#elif defined(__SANITIZE_THREAD__)
#define SR_SANITIZERS "thread"
#else
#define SR_SANITIZERS "none"
#endif

int sr_print_version(FILE *out)
{
    const curl_version_info_data *cv = curl_version_info(CURLVERSION_NOW);
    const unsigned xv = XXH_versionNumber();
    fprintf(out, "spotrun %s (commit %s)\n", SPOTRUN_VERSION, SPOTRUN_COMMIT);
    fprintf(out, "stores: file, s3, az (libcurl %s, %s)\n", cv->version,
            cv->ssl_version ? cv->ssl_version : "no TLS");
    fprintf(out, "archive: %s, zstd %s, jansson %s, xxhash %u.%u.%u\n", archive_version_string(),
            ZSTD_versionString(), jansson_version_str(), xv / 10000, xv / 100 % 100, xv % 100);
    fprintf(out, "features: cuda-shim (CUDA found at run time by dlopen), notices aws gcp "
                 "azure signal, python module\n");
    char self[PATH_MAX], shim[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    self[n > 0 ? n : 0] = '\0';
    if (sr_find_preload(self, shim, sizeof(shim)) == 0)
        fprintf(out, "shim: %s\n", shim);
    else
        fprintf(out, "shim: not found beside %s (set SPOTRUN_PRELOAD; run works without it)\n",
                self);
    fprintf(out, "build: %s, sanitizers: %s\n", SPOTRUN_BUILD_TYPE, SR_SANITIZERS);
    return ferror(out) ? SR_EX_IOERR : 0;
}
