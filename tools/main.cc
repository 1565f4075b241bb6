// STUB: the qcc command line (to be replaced).
#include <cstdio>
int main() { std::puts("qcc " QCC_VERSION); return 0; }
