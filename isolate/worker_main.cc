// axqc-worker: runs checks for axqc-server (--isolation process) and `axqc check --isolate`
// inside a sandbox. Started by them only (it needs the control socket they pass on fd 3).
#include "worker.h"

int main(int argc, char** argv) { return axqc::isolate::RunWorker(argc, argv); }
