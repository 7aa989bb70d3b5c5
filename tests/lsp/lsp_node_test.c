#include "lsp_fixture.h"
int main(void){return 0;}
