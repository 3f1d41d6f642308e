/* hostcost: the host time of one SpMM call (GPU idle before it), cusparseSpMM directly
 * against tcsparseSpMM forced to cuSPARSE, automatic and forced to the tensor cores, plus two
 * pieces of the routed path (the buffer-extent query, the mirror descriptor queries) and
 * cusparseSpMM CSR_ALG3 (preprocessed).  The
 * matrix: argv[2] rows (default 2708) of argv[3] nonzeros (default 4; cora-like), their
 * columns spread over a band of 50 x that many columns, or over all columns when argv[4] is
 * "uniform"; N = argv[1] (default 32).
 * Prints the median of 3000 calls: host time (clock around the call) and event time.
 * Build and run from a configured build tree (docs/performance.md, "Interposer"):
 *   gcc -O2 -o hostcost $SRC/bench/hostcost.c -I$SRC/include -I/usr/local/cuda/include \
 *       -L.libs -L/usr/local/cuda/lib64 -ltcsparse -lcusparse -lcudart -lcuda
 *   LD_LIBRARY_PATH=.libs ./hostcost 32 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <cusparse.h>
#include "tcsparse.h"
#include "tcsparse_ext.h"
#define R 3000
static double now_us(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e6+t.tv_nsec*1e-3;}
static int cmpd(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
static double med(double*v){qsort(v,R,sizeof*v,cmpd);return v[R/2];}
int main(int argc,char**argv){
  int N=argc>1?atoi(argv[1]):32, rows=argc>2?atoi(argv[2]):2708, per=argc>3?atoi(argv[3]):4;
  int uniform=argc>4&&argv[4][0]=='u';
  if(N<1||rows<per*51||per<1){fprintf(stderr,"usage: hostcost [N [rows [per_row [uniform]]]]\n");return 2;}
  long long nnzl=(long long)rows*per; int nnz=(int)nnzl; int*off=malloc(4*(rows+1));int*col=malloc(4*nnz);float*val=malloc(4*nnz);
  srand(1); for(int i=0;i<=rows;i++)off[i]=i*per;
  for(int i=0;i<rows;i++){int b=rand()%(rows-per*50);for(int j=0;j<per;j++)col[i*per+j]=uniform?(int)(((double)rand()/((double)RAND_MAX+1))*rows/per)*per+j:b+j*50+rand()%50;
    for(int j=1;j<per;j++)for(int q=j;q>0&&col[i*per+q-1]>col[i*per+q];q--){int t=col[i*per+q];col[i*per+q]=col[i*per+q-1];col[i*per+q-1]=t;}}
  for(int i=0;i<nnz;i++)val[i]=rand()/(float)RAND_MAX;
  int*doff,*dcol;float*dval,*dB,*dC;void*buf1,*buf2;
  cudaMalloc((void**)&doff,4*(rows+1));cudaMalloc((void**)&dcol,4*nnz);cudaMalloc((void**)&dval,4*nnz);
  cudaMalloc((void**)&dB,4*rows*N);cudaMalloc((void**)&dC,4*rows*N);cudaMemset(dB,0,4*rows*N);
  cudaMemcpy(doff,off,4*(rows+1),cudaMemcpyHostToDevice);cudaMemcpy(dcol,col,4*nnz,cudaMemcpyHostToDevice);cudaMemcpy(dval,val,4*nnz,cudaMemcpyHostToDevice);
  cusparseHandle_t cu;cusparseCreate(&cu);cusparseSpMatDescr_t A;cusparseDnMatDescr_t B,C;
  cusparseCreateCsr(&A,rows,rows,nnz,doff,dcol,dval,CUSPARSE_INDEX_32I,CUSPARSE_INDEX_32I,CUSPARSE_INDEX_BASE_ZERO,CUDA_R_32F);
  cusparseCreateDnMat(&B,rows,N,N,dB,CUDA_R_32F,CUSPARSE_ORDER_ROW);cusparseCreateDnMat(&C,rows,N,N,dC,CUDA_R_32F,CUSPARSE_ORDER_ROW);
  tcsparseHandle_t tc;tcsparseCreate(&tc);tcsparseSpMatDescr_t tA;tcsparseDnMatDescr_t tB,tC;
  tcsparseCreateCsr(&tA,rows,rows,nnz,doff,dcol,dval,TCSPARSE_INDEX_32I,TCSPARSE_INDEX_32I,TCSPARSE_INDEX_BASE_ZERO,CUDA_R_32F);
  tcsparseCreateDnMat(&tB,rows,N,N,dB,CUDA_R_32F,TCSPARSE_ORDER_ROW);tcsparseCreateDnMat(&tC,rows,N,N,dC,CUDA_R_32F,TCSPARSE_ORDER_ROW);
  float one=1,zero=0;size_t s1=0,s2=0;
  cusparseSpMM_bufferSize(cu,0,0,&one,A,B,&zero,C,CUDA_R_32F,CUSPARSE_SPMM_ALG_DEFAULT,&s1);cudaMalloc(&buf1,s1+16);
  tcsparseSpMM_bufferSize(tc,0,0,&one,tA,tB,&zero,tC,CUDA_R_32F,TCSPARSE_SPMM_ALG_DEFAULT,&s2);cudaMalloc(&buf2,s2+16);
  tcsparseSpMM_preprocess(tc,0,0,&one,tA,tB,&zero,tC,CUDA_R_32F,TCSPARSE_SPMM_ALG_DEFAULT,buf2);
  /* a second set of cuSPARSE descriptors for CSR_ALG3, preprocessed (as the routed path does) */
  cusparseSpMatDescr_t A3;cusparseDnMatDescr_t B3,C3;void*buf3;size_t s3=0;
  cusparseCreateCsr(&A3,rows,rows,nnz,doff,dcol,dval,CUSPARSE_INDEX_32I,CUSPARSE_INDEX_32I,CUSPARSE_INDEX_BASE_ZERO,CUDA_R_32F);
  cusparseCreateDnMat(&B3,rows,N,N,dB,CUDA_R_32F,CUSPARSE_ORDER_ROW);cusparseCreateDnMat(&C3,rows,N,N,dC,CUDA_R_32F,CUSPARSE_ORDER_ROW);
  cusparseSpMM_bufferSize(cu,0,0,&one,A3,B3,&zero,C3,CUDA_R_32F,CUSPARSE_SPMM_CSR_ALG3,&s3);cudaMalloc(&buf3,s3+16);
  cusparseSpMM_preprocess(cu,0,0,&one,A3,B3,&zero,C3,CUDA_R_32F,CUSPARSE_SPMM_CSR_ALG3,buf3);
  cudaEvent_t e0,e1;cudaEventCreate(&e0);cudaEventCreate(&e1);
  static double h[R],ev[R];
  const char*names[]={"cusparse direct","tc forced cusparse","tc auto","tc forced tc","cuMemGetAddressRange","CsrGet+2xDnMatGetValues","empty (clock only)","cusparse direct CSR_ALG3"};
  int routes[]={-1,TCSPARSE_ROUTE_CUSPARSE,TCSPARSE_ROUTE_AUTO,TCSPARSE_ROUTE_TC,-2,-3,-4,-5};
  for(int k=0;k<8;k++){
    if(routes[k]>=0)tcsparseSetRoute(tc,routes[k]);
    for(int i=0;i<R+50;i++){
      cudaDeviceSynchronize(); cudaEventRecord(e0,0); double t0=now_us(); int st=0;
      if(k==0) st=cusparseSpMM(cu,0,0,&one,A,B,&zero,C,CUDA_R_32F,CUSPARSE_SPMM_ALG_DEFAULT,buf1);
      else if(routes[k]>=0) st=tcsparseSpMM(tc,0,0,&one,tA,tB,&zero,tC,CUDA_R_32F,TCSPARSE_SPMM_ALG_DEFAULT,buf2);
      else if(k==7) st=cusparseSpMM(cu,0,0,&one,A3,B3,&zero,C3,CUDA_R_32F,CUSPARSE_SPMM_CSR_ALG3,buf3);
      else if(k==4){CUdeviceptr b;size_t sz;st=cuMemGetAddressRange(&b,&sz,(CUdeviceptr)buf2);}
      else if(k==5){int64_t r,c,n;void*o,*ix,*v;cusparseIndexType_t ot,it;cusparseIndexBase_t bb;cudaDataType vt;
        st=cusparseCsrGet(A,&r,&c,&n,&o,&ix,&v,&ot,&it,&bb,&vt);void*x;cusparseDnMatGetValues(B,&x);cusparseDnMatGetValues(C,&x);}
      double t1=now_us(); cudaEventRecord(e1,0); cudaEventSynchronize(e1); float ms;cudaEventElapsedTime(&ms,e0,e1);
      if(st){printf("%s failed %d\n",names[k],st);break;}
      if(i>=50){h[i-50]=t1-t0;ev[i-50]=ms*1e3;}
    }
    tcsparseRouteInfo_t ri;tcsparseGetLastRoute(tc,&ri);
    printf("%s N=%d %-26s host %6.2f us  event %6.2f us%s%s\n",uniform?"uniform":"banded",N,names[k],med(h),med(ev),routes[k]>=0?"  -> ":"",routes[k]>=0?ri.kernel:"");
  }
  return 0;
}
