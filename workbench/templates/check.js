(function(){
  var f=document.querySelectorAll('figure[data-chart]'),t=document.querySelectorAll('table[data-table]'),bad=[];
  f.forEach(function(x){var s=x.querySelector('svg');if(!s){bad.push(x.dataset.chart);return;}
    var b=s.getBoundingClientRect();
    if(b.width<100||b.height<100||s.querySelectorAll('polyline,path,rect,circle').length<3)bad.push(x.dataset.chart);});
  t.forEach(function(x){if(x.querySelectorAll('tbody tr').length<1||x.getBoundingClientRect().height<10)bad.push(x.dataset.table);
    var box=x.parentElement;if(!box||!box.classList.contains('scroll'))bad.push(x.dataset.table+':unboxed');});
  if(document.documentElement.scrollWidth>window.innerWidth+1)bad.push('page-overflows');
  var h=document.querySelector('h2');if(!h||h.id!=='verdict')bad.push('verdict-not-first');
  document.body.setAttribute('data-check',(bad.length?'bad ':'ok ')+f.length+' charts '+t.length+' tables '+bad.join(','));
})();
